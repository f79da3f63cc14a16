"""`physarum live` as a person uses it: the command started on a tiny preset, its page opened in a
real headless Chromium (Debian's, driven by Selenium through Debian's chromium-driver), a slider
moved, the change seen in the frames and the record, the performance saved, the server stopped
with Ctrl-C; then `physarum render` of the saved preset gives exactly the frames the page
received (their sha256, sent with each frame)."""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the test extra installs it
    webdriver = None

MISSING = (
    "headless Chromium is not installed (apt-get install chromium)"
    if CHROMIUM is None
    else "chromium-driver is not installed (apt-get install chromium-driver)"
    if DRIVER is None
    else "selenium is not installed (pip install -e '.[test]')"
    if webdriver is None
    else None
)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(MISSING is not None, reason=MISSING or "")]

TINY = """name: tiny
seed: 3
canvas: {width: 48, height: 32}
agents: {count: 400, spawn: random}
model: {sensor_distance: 5.3, deposit: 5, diffuse: 0.5, decay: 0.1}
run: {steps: 24, steps_per_frame: 3}
palette: {names: [magma, ice], every: 3, gamma: 0.8}
output: {formats: [gif], fps: 20}
"""
WAIT = 120  # seconds: the 2-core CPU is shared
STARVED = 50  # times slower: the page's CPU as a loaded 2-core CI machine may leave it


def physarum(*args: str, **options) -> subprocess.Popen:
    command = [sys.executable, "-m", "physarum.render.cli", *args, "--backend", "torch", "--device", "cpu"]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ordinary_scheduling,  # in the child, before it runs: time-shared
        **options,
    )


def browser(autoplay: bool = False):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(flag)
    if autoplay:  # the test starts the track without a click; nothing is heard
        options.add_argument("--autoplay-policy=no-user-gesture-required")
        options.add_argument("--mute-audio")
    default = socket.getdefaulttimeout()
    socket.setdefaulttimeout(WAIT)  # each command to chromedriver answers within WAIT, or raises
    try:
        driver = webdriver.Chrome(
            service=Service(DRIVER, popen_kw={"preexec_fn": ordinary_scheduling}), options=options
        )
    finally:
        socket.setdefaulttimeout(default)
    STARTED.append(driver)
    return driver


STARTED: list = []  # the browsers a test started (browser())
TEST_LIMIT = 600  # seconds: a test's browsers are killed after this, so that a hang fails the test


@pytest.fixture(autouse=True)
def browsers_ended():
    """Every browser a test starts is killed TEST_LIMIT seconds into the test (a command
    waiting on it then fails rather than hangs) and after the test, whatever happened; the test
    and what it starts run time-shared (ordinary_scheduling)."""

    def end_all():
        for driver in STARTED:
            end_browser(driver)

    policy = ordinary_scheduling()
    watchdog = threading.Timer(TEST_LIMIT, end_all)
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()
        end_all()
        STARTED.clear()
        if policy is not None:
            os.sched_setscheduler(0, *policy)


def ordinary_scheduling() -> tuple | None:
    """The test process made time-shared (SCHED_OTHER) where it runs under a real-time policy;
    its policy before (to restore), or None where it was time-shared already. A CI run's test
    process ran under SCHED_FIFO at priority 99, set by SVT-AV1 in an earlier test's AV1 MP4 (run
    as root; the MP4 writer now undoes it: formats/av_video.scheduling_kept). Chromium,
    chromedriver and the live server inherited it; Chromium's busy threads then never yielded
    to the test's threads of the same priority, the watchdogs' included, and the suite waited
    over 10 minutes until Chromium was killed by hand."""
    if not hasattr(os, "sched_getscheduler") or os.sched_getscheduler(0) == os.SCHED_OTHER:
        return None
    before = (os.sched_getscheduler(0), os.sched_getparam(0))
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))  # lowering needs no privilege
    return before


def descendants(pid: int) -> list[int]:
    """The processes under pid (from /proc), deepest last: chromedriver's browser and its helpers."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def end_browser(driver) -> None:
    """chromedriver and every process under it killed, without asking them: a request waiting
    on a browser that does not answer then fails at once instead of waiting for ever."""
    process = driver.service.process
    for pid in [*descendants(process.pid), process.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def opened(url: str, autoplay: bool = False, slowed: int = 1):
    """A browser showing the page at url (its CPU `slowed` times slower, DevTools' throttling):
    its load bounded by WAIT, tried once more in a new browser where a headless Chromium on the
    loaded 2-core CPU never finished loading it. chromedriver's own page-load timeout is not
    enough: with Chromium's renderer at full CPU, driver.get once waited over 13 minutes on a
    chromedriver that never answered, so a watchdog kills the browser WAIT + 30 s after the load
    began (the retry in a new browser then passed)."""
    for attempt in (1, 2):
        driver = browser(autoplay)
        driver.set_page_load_timeout(WAIT)
        watchdog = threading.Timer(WAIT + 30, end_browser, [driver])
        watchdog.start()
        try:
            if slowed > 1:
                driver.execute_cdp_cmd("Emulation.setCPUThrottlingRate", {"rate": slowed})
            driver.get(url)
            return driver
        except Exception:  # selenium's TimeoutException, urllib3's read timeout, a killed driver
            end_browser(driver)
            if attempt == 2:
                raise
        finally:
            watchdog.cancel()


def live(tmp_path, text: str = TINY) -> subprocess.Popen:
    """`physarum live tiny.yaml` (text) started in tmp_path on a free port."""
    (tmp_path / "tiny.yaml").write_text(text)
    return physarum("live", "tiny.yaml", "--port", "0", "--out", "out", cwd=tmp_path)


def url_of(server: subprocess.Popen) -> str:
    """The page's address, from the live server's first line."""
    line = server.stdout.readline()
    assert "http://127.0.0.1:" in line, line + server.stderr.read()
    return line.split(" at ")[1].split()[0]


def ended(server: subprocess.Popen, driver) -> tuple[str, str]:
    """The browser closed (where one opened) and the live server stopped as Ctrl-C stops it,
    within 60 s or killed; its stdout and stderr."""
    if driver is not None:
        driver.quit()
    server.send_signal(signal.SIGINT)
    try:
        return server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        raise


def rgb_sha(path) -> str:
    return hashlib.sha256(np.asarray(Image.open(path).convert("RGB")).tobytes()).hexdigest()


def test_a_slider_moved_in_the_page_is_recorded_and_renders_again_exactly(tmp_path):
    server = live(tmp_path)
    driver = None
    try:
        url = url_of(server)
        driver = opened(url)
        wait = WebDriverWait(driver, WAIT)
        received = "return window.live ? window.live.received.length : 0"
        wait.until(lambda d: d.execute_script(received) >= 4)
        assert driver.find_element(By.ID, "role").text == "this page controls the simulation"
        slider = driver.find_element(By.CSS_SELECTOR, "input[type=range][data-key='model.decay']")
        before = float(slider.get_attribute("value"))
        slider.send_keys(Keys.END)  # the slider to its end: decay just under 1
        wait.until(lambda d: d.execute_script("return window.live.changes.length") == 1)
        change = driver.execute_script("return window.live.changes[0]")
        assert change["key"] == "model.decay" and change["value"] > before
        # the frames after the change: nearly all the trail decays each step, the picture darkens
        seen = lambda d: d.execute_script(received) >= change["frame"] + 4  # noqa: E731
        wait.until(seen)
        status = driver.find_element(By.ID, "status").text
        assert status.startswith("frame ") and "48x32" in status
        driver.find_element(By.ID, "save").click()
        wait.until(lambda d: d.execute_script("return window.live.saved") is not None)
        saved = driver.execute_script("return window.live.saved")
        frames = driver.execute_script("return window.live.received")
        driver.save_screenshot(str(tmp_path / "page.png"))
    finally:
        out, err = ended(server, driver)
    assert server.returncode == 0, err
    assert "stopped" in err
    # every frame reached the page, in order, from the first
    assert [f["frame"] for f in frames] == list(range(len(frames)))
    assert saved["name"] == "tiny-live-1" and saved["frames"] <= len(frames)
    preset = tmp_path / "out" / "tiny-live" / "tiny-live-1.yaml"
    data = yaml.safe_load(preset.read_text())
    assert data["run"]["steps"] == saved["frames"] * 3
    assert data["model"]["decay"]["keys"] == {"0": 0.1, str(change["step"]): change["value"]}
    render = physarum(
        "render",
        str(preset),
        "--out",
        str(tmp_path / "again"),
        "--frames-dir",
        str(tmp_path / "frames"),
        "--quiet",
    )
    out, err = render.communicate(timeout=600)
    assert render.returncode == 0, err
    pngs = sorted((tmp_path / "frames").glob("*.png"))
    assert len(pngs) == saved["frames"]
    assert [rgb_sha(p) for p in pngs] == [f["sha256"] for f in frames[: len(pngs)]]
    # the change showed: the same performance without it shows the same frames up to it, others after
    data["model"]["decay"], data["name"] = 0.1, "plain"
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(data))
    render = physarum(
        "render", str(plain), "--out", str(tmp_path / "p"), "--frames-dir", str(tmp_path / "pf"), "--quiet"
    )
    assert render.wait(timeout=600) == 0
    unchanged = [rgb_sha(p) for p in sorted((tmp_path / "pf").glob("*.png"))]
    shown = [f["sha256"] for f in frames[: len(pngs)]]
    assert unchanged[: change["frame"]] == shown[: change["frame"]]
    assert unchanged[change["frame"] :] != shown[change["frame"] :]


def test_a_page_on_a_starved_cpu_still_answers_and_gets_every_frame(tmp_path):
    """The cause of the hang above: the server sent frames as fast as the loop made them (about
    370 a second of this preset) and the socket's buffers held hundreds; a page slower than that
    drew a backlog it never caught up with, and everything else it was asked waited behind it.
    With the page's CPU 50 times slower, each execute_script took over 80 s and still timed out;
    paced (the page reports each frame drawn, the server keeps 2 ahead) it answers at once."""
    server = live(tmp_path)
    driver = None
    try:
        driver = opened(url_of(server), slowed=STARVED)
        driver.set_script_timeout(30)
        answers = []
        for _ in range(3):
            start = time.monotonic()
            answers.append(
                (driver.execute_script("return window.live.received.length"), time.monotonic() - start)
            )
        frames = driver.execute_script("return window.live.received")
    finally:
        out, err = ended(server, driver)
    assert server.returncode == 0, err
    assert all(seconds < 15 for _, seconds in answers), answers
    assert answers[-1][0] > answers[0][0]  # it goes on drawing
    assert [f["frame"] for f in frames] == list(range(len(frames)))  # every frame, in order


def test_an_audio_preset_plays_its_track_and_the_frames_follow_its_clock(tmp_path):
    import wave

    rate, seconds = 22050, 1.5
    t = np.arange(int(rate * seconds))
    tone = (8000 * np.sin(2 * np.pi * 110 * t / rate) * (1 + (t // (rate // 4)) % 2)).astype(np.int16)
    with wave.open(str(tmp_path / "beat.wav"), "wb") as out:
        out.setnchannels(1), out.setsampwidth(2), out.setframerate(rate)
        out.writeframes(tone.tobytes())
    text = TINY.replace("run: {steps: 24, steps_per_frame: 3}", "run: {steps: audio, steps_per_frame: 3}")
    text = text.replace("deposit: 5,", "deposit: {audio: loudness, range: [2, 9], release: 100ms},")
    server = live(tmp_path, text + "audio: {path: beat.wav, bpm: 120}\n")
    driver = None
    try:
        driver = opened(url_of(server), autoplay=True)
        wait = WebDriverWait(driver, WAIT)
        wait.until(lambda d: d.execute_script("return window.live && window.live.sound !== null"))
        sound = driver.execute_script("return window.live.sound")
        assert sound["fps"] == 20 and sound["frames"] == 30 and sound["type"] == "audio/wav"
        audio = "document.getElementById('sound')"
        wait.until(lambda d: d.execute_script(f"return {audio}.readyState") >= 1)
        # a seek: the frame shown is floor(0.52 x 20) = 10
        driver.execute_script(f"{audio}.currentTime = 0.52")
        last = "return window.live.received.length ? window.live.received.at(-1).frame : -1"
        wait.until(lambda d: d.execute_script(last) == 10)
        # played to its end: the frames follow the clock to the last frame
        driver.execute_script(f"{audio}.play()")
        wait.until(lambda d: d.execute_script(f"return {audio}.ended"))
        wait.until(lambda d: d.execute_script(last) == 29)
        frames = driver.execute_script("return window.live.received")
        clock = driver.execute_script("return window.live.clock")
        driver.find_element(By.ID, "save").click()
        wait.until(lambda d: d.execute_script("return window.live.saved") is not None)
        saved = driver.execute_script("return window.live.saved")
    finally:
        out, err = ended(server, driver)
    assert server.returncode == 0, err
    numbers = [f["frame"] for f in frames]
    assert numbers[0] == 0 and 10 in numbers and numbers[-1] == 29
    assert numbers == sorted(numbers)  # no seek back: one take, frames in the clock's order
    reported = {min(29, math.floor(Fraction(time) * 20)) for time in clock}  # as the server reads them
    assert set(numbers) <= reported | {0}  # only frames a reported clock stood at
    preset = tmp_path / "out" / "tiny-live" / f"{saved['name']}.yaml"
    assert yaml.safe_load(preset.read_text())["run"]["steps"] == 90  # the whole track
    render = physarum(
        "render",
        str(preset),
        "--out",
        str(tmp_path / "again"),
        "--frames-dir",
        str(tmp_path / "f"),
        "--quiet",
    )
    out, err = render.communicate(timeout=600)
    assert render.returncode == 0, err
    rendered = [rgb_sha(p) for p in sorted((tmp_path / "f").glob("*.png"))]
    assert len(rendered) == 30
    assert [f["sha256"] for f in frames] == [rendered[n] for n in numbers]


def test_the_browser_and_the_server_run_time_shared_under_a_real_time_test_process(tmp_path):
    """Under SCHED_FIFO (as a CI machine ran the whole suite) the test gives its children the
    time-shared policy: chromedriver, Chromium and the live server (see ordinary_scheduling)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        pytest.skip("a real-time policy needs CAP_SYS_NICE (root), which this machine does not give")
    server = driver = None
    try:
        server = live(tmp_path)
        driver = browser()
        assert os.sched_getscheduler(0) == os.SCHED_FIFO  # the test's own: set above
        children = [server.pid, driver.service.process.pid, *descendants(driver.service.process.pid)]
        assert len(children) > 3  # the server, chromedriver, Chromium and its helpers
        policies = {policy for policy in map(policy_of, children) if policy is not None}
        assert policies == {os.SCHED_OTHER}
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        if server is not None:
            ended(server, driver)


def policy_of(pid: int) -> int | None:
    """A process's scheduling policy, None where it has ended (Chromium's helpers come and go)."""
    try:
        return os.sched_getscheduler(pid)
    except ProcessLookupError:
        return None

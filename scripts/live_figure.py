"""docs/figures/live-page.png: the live page in Debian's headless Chromium (Selenium through
chromium-driver), quickstart at its preview size after a slider move, as docs/live.md shows it.

    python scripts/live_figure.py [OUT.png]
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "figures" / "live-page.png"
    folder = tempfile.mkdtemp()
    command = [
        sys.executable,
        "-m",
        "physarum.render.cli",
        "live",
        "quickstart",
        "--port",
        "0",
        "--out",
        folder,
    ]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--window-size=1180,760"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        url = server.stdout.readline().split(" at ")[1].split()[0]
        driver.get(url)
        wait = WebDriverWait(driver, 120)
        wait.until(lambda d: d.execute_script("return window.live.received.length") >= 30)
        slider = driver.find_element(By.CSS_SELECTOR, "input[type=range][data-key='model.sensor_angle']")
        for _ in range(60):
            slider.send_keys(Keys.ARROW_RIGHT)
        wait.until(lambda d: d.execute_script("return window.live.changes.length") >= 1)
        time.sleep(4)
        driver.find_element(By.ID, "save").click()
        wait.until(lambda d: d.execute_script("return window.live.saved") is not None)
        time.sleep(1)
        driver.save_screenshot(str(out))
    finally:
        driver.quit()
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    print(out, out.stat().st_size, "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

// physarum live: frames from the server's WebSocket onto a canvas; controls built from the
// preset schema's bounds the server sends; every command is JSON, every frame a binary message
// (4-byte length, JSON header with the frame's sha256, JPEG). The page reports each frame it has
// drawn ("shown") and the server runs at most AHEAD frames ahead of it: a slow page is not
// buried under frames it cannot draw.
"use strict";

const AHEAD = 2;

const token = new URLSearchParams(location.search).get("token");
const query = token ? "?token=" + encodeURIComponent(token) : "";
const live = (window.live = { received: [], segment: null, control: false, changes: [], saved: null, rendered: null, problems: [], sound: null, clock: [] });
const $ = (id) => document.getElementById(id);
const view = $("view");
const context = view.getContext("2d");
let socket = null;
let paused = false;
let pendingRestart = {};
let times = [];

function send(message) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

function say(text, ok) {
  const line = document.createElement("div");
  line.textContent = text;
  if (ok) line.className = "ok";
  $("messages").prepend(line);
  while ($("messages").children.length > 6) $("messages").lastChild.remove();
}

function logChange(change) {
  live.changes.push(change);
  const line = document.createElement("div");
  line.textContent = `step ${change.step} (frame ${change.frame}): ${change.key} = ${change.value}`;
  $("log").prepend(line);
}

function fileLinks(files) {
  for (const file of files) {
    const link = document.createElement("a");
    link.href = "files/" + file.index + query;
    link.textContent = file.name;
    link.target = "_blank";
    $("files").append(link);
  }
}

function label(control) {
  return control.key.replace(/^species\.(\d+)\.model\./, "").replace(/^(model|look|palette)\./, "");
}

function numberRow(control, row) {
  const finite = control.lo !== null && control.hi !== null && control.hi - control.lo <= 1000;
  const number = document.createElement("input");
  number.type = "number";
  number.value = control.value === null ? "" : control.value;
  number.step = "any";
  let slider = null;
  if (finite) {
    slider = document.createElement("input");
    slider.type = "range";
    const step = (control.hi - control.lo) / 1000;
    slider.min = control.lo_open ? control.lo + step : control.lo;
    slider.max = control.hi_open ? control.hi - step : control.hi;
    slider.step = Number.isInteger(control.value) && control.key !== "seed" && step >= 1 ? 1 : step;
    slider.value = control.value === null ? slider.min : control.value;
    slider.dataset.key = control.key;
    slider.addEventListener("input", () => (number.value = slider.value));
    slider.addEventListener("change", () => commit(control, parseFloat(slider.value), row));
  }
  number.dataset.key = control.key;
  number.addEventListener("change", () => {
    if (slider) slider.value = number.value;
    commit(control, number.value === "" ? null : parseFloat(number.value), row);
  });
  return [slider || document.createElement("span"), number];
}

function commit(control, value, row) {
  if (control.live) {
    send({ type: "set", key: control.key, value: value });
  } else {
    pendingRestart[control.key] = value;
    row.style.outline = "1px dashed #c90";
    say(`${control.key}: takes effect at the next restart`, true);
  }
}

function buildControls(controls) {
  const root = $("controls");
  root.textContent = "";
  const groups = {};
  for (const control of controls) {
    if (control.key === "seed") {
      $("seed").value = control.value;
      continue;
    }
    if (!groups[control.group]) {
      const set = document.createElement("fieldset");
      const legend = document.createElement("legend");
      legend.textContent = control.group;
      set.append(legend);
      root.append(set);
      groups[control.group] = set;
    }
    const row = document.createElement("div");
    row.className = "row" + (control.live ? "" : " restart") + (control.fixed ? " fixed" : "");
    const name = document.createElement("label");
    name.textContent = label(control);
    name.title = control.key + (control.fixed ? ": " + control.fixed : control.live ? ": applies at the next step" : ": applies by a restart");
    let widgets;
    if (control.kind === "choice") {
      const select = document.createElement("select");
      for (const choice of control.choices) {
        const option = document.createElement("option");
        option.value = option.textContent = choice;
        select.append(option);
      }
      select.value = control.value;
      select.dataset.key = control.key;
      select.addEventListener("change", () => commit(control, select.value, row));
      widgets = [select, document.createElement("span")];
    } else if (control.kind === "flag") {
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = control.value;
      box.dataset.key = control.key;
      box.addEventListener("change", () => commit(control, box.checked, row));
      widgets = [box, document.createElement("span")];
    } else {
      widgets = numberRow(control, row);
    }
    if (control.fixed || !live.control) widgets.forEach((w) => (w.disabled = true));
    row.append(name, ...widgets);
    groups[control.group].append(row);
  }
  pendingRestart = {};
}

async function showFrame(data) {
  try {
    await drawFrame(data);
  } finally {
    send({ type: "shown" });
  }
}

async function drawFrame(data) {
  const length = new DataView(data, 0, 4).getUint32(0);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(data, 4, length)));
  if (header.segment !== live.segment) {
    live.segment = header.segment;
    live.received = [];
  }
  live.received.push(header);
  const bitmap = await createImageBitmap(new Blob([new Uint8Array(data, 4 + length)], { type: "image/jpeg" }));
  if (view.width !== header.width || view.height !== header.height) {
    view.width = header.width;
    view.height = header.height;
  }
  context.drawImage(bitmap, 0, 0);
  bitmap.close();
  const now = performance.now();
  times.push(now);
  while (times.length && now - times[0] > 2000) times.shift();
  const fps = times.length > 1 ? ((times.length - 1) * 1000) / (now - times[0]) : 0;
  $("status").textContent = `frame ${header.frame}  step ${header.step}  ${header.width}x${header.height}  ${fps.toFixed(1)} fps`;
  $("status").dataset.frame = header.frame;
}

function onMessage(message) {
  if (typeof message.data !== "string") {
    showFrame(message.data);
    return;
  }
  const event = JSON.parse(message.data);
  if (event.type === "hello") {
    live.control = event.control;
    $("role").textContent = event.control ? (event.shared ? "control shared with every page" : "this page controls the simulation") : "watching: another page controls the simulation";
    for (const id of ["pause", "step", "save", "render", "restart"]) $(id).disabled = !event.control || (id === "step" && !paused);
    buildControls(event.controls);
    setUpSound(event.sound);
    $("files").textContent = "";
    fileLinks(event.files);
    if (event.segment && event.segment.changes) event.segment.changes.forEach(logChange);
  } else if (event.type === "controls") {
    buildControls(event.controls);
  } else if (event.type === "replay") {
    say(`the track went back: performance ${event.segment} replayed from step 0 (take ${event.take})`, true);
  } else if (event.type === "segment") {
    if (live.sound) {
      live.clockFrame = null;
      $("sound").currentTime = 0;
    }
    $("log").textContent = "";
    live.changes = [];
    say(`performance ${event.segment}: ${event.name} ${event.width}x${event.height}, a frame every ${event.steps_per_frame} steps`, true);
  } else if (event.type === "applied") {
    event.changes.forEach(logChange);
  } else if (event.type === "problem") {
    live.problems.push(...event.problems);
    event.problems.forEach((p) => say(p));
  } else if (event.type === "failed") {
    say("the simulation stopped: " + event.message);
  } else if (event.type === "paused") {
    paused = event.paused;
    $("pause").textContent = paused ? "resume" : "pause";
    $("step").disabled = !paused || !live.control;
  } else if (event.type === "saved" || event.type === "rendering") {
    live.saved = event;
    say(`saved ${event.name}: ${event.frames} frames`, true);
    fileLinks(event.files);
    if (event.type === "rendering") $("progress").textContent = `rendering ${event.name}...`;
  } else if (event.type === "progress") {
    $("progress").textContent = `rendering: frame ${event.done} of ${event.frames}`;
  } else if (event.type === "rendered") {
    live.rendered = event;
    $("progress").textContent = event.error ? "render failed: " + event.error : "render done";
    fileLinks(event.files);
  }
}

// A preset with a sound file: the page plays it and reports where the audio stands; the server
// shows frame floor(time x fps). Only a page that controls reports (a watcher hears its own).
function reportClock() {
  const audio = $("sound");
  if (!live.sound || !live.control) return;
  const frame = Math.min(live.sound.frames - 1, Math.floor(audio.currentTime * live.sound.fps));
  if (frame !== live.clockFrame) {
    live.clockFrame = frame;
    live.clock.push(audio.currentTime);
    send({ type: "clock", time: audio.currentTime });
  }
}

function clockLoop() {
  reportClock();
  live.looping = !$("sound").paused;
  if (live.looping) requestAnimationFrame(clockLoop);
}

function onSound() {
  reportClock();
  if (!live.looping && !$("sound").paused) clockLoop();
}

function setUpSound(sound) {
  live.sound = sound;
  $("track").hidden = !sound;
  if (!sound) return;
  const audio = $("sound");
  if (!audio.src) {
    audio.src = sound.url + query;
    for (const name of ["play", "seeked", "pause", "ended"]) audio.addEventListener(name, onSound);
  }
  $("pause").textContent = "play";
  $("step").disabled = !live.control;
}

function toggleSound() {
  const audio = $("sound");
  if (audio.paused) audio.play();
  else audio.pause();
}

function stepSound() {
  // half a frame into the next frame: floor(time x fps) is that frame, whatever the float's rounding
  const audio = $("sound");
  audio.pause();
  const next = Math.min(live.sound.frames - 1, Math.floor(audio.currentTime * live.sound.fps) + 1);
  audio.currentTime = (next + 0.5) / live.sound.fps;
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const pace = (query ? query + "&" : "?") + "ahead=" + AHEAD;
  socket = new WebSocket(`${scheme}//${location.host}/ws${pace}`);
  socket.binaryType = "arraybuffer";
  socket.onmessage = onMessage;
  socket.onclose = () => ($("status").textContent = "disconnected: the server stopped");
}

$("pause").addEventListener("click", () => (live.sound ? toggleSound() : send({ type: paused ? "resume" : "pause" })));
$("step").addEventListener("click", () => (live.sound ? stepSound() : send({ type: "step" })));
$("sound").addEventListener("play", () => ($("pause").textContent = "pause"));
$("sound").addEventListener("pause", () => ($("pause").textContent = "play"));
$("save").addEventListener("click", () => send({ type: "save" }));
$("render").addEventListener("click", () => send({ type: "render" }));
$("restart").addEventListener("click", () => {
  const settings = { ...pendingRestart };
  const seed = $("seed").value;
  if (seed !== "") settings.seed = parseInt(seed, 10);
  send({ type: "restart", settings: settings });
});
connect();

// Riacho — the composer before Python starts.
//
// The page shell is interactive from first paint: the user can type at once, and a prompt sent
// before Python is ready is kept, shown as queued, and handed to Python when it is (see
// app/browser/page.py). take() removes these listeners and returns the queue in one step, so a
// prompt is sent exactly once: by Python, after it has taken over the composer.
const form = document.querySelector("#composer");
const prompt = document.querySelector("textarea[name=prompt]");
const column = document.querySelector("#message-column");
const queued = [];

function queue(event) {
  event.preventDefault();
  const text = prompt.value;
  if (!text.trim() || queued.length) return; // NOTE: one prompt waits; the rest stays typed
  queued.push(text);
  prompt.value = "";
  const note = document.createElement("article");
  note.className = "message queued";
  note.setAttribute("data-queued", "");
  const bubble = document.createElement("div");
  bubble.className = "bubble";
  bubble.textContent = text;
  const status = document.createElement("p");
  status.className = "queued-status";
  status.textContent = "Queued: it is sent as soon as Riacho has started";
  note.append(bubble, status);
  column.replaceChildren(note);
}

function onKey(event) {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) queue(event);
}

form.addEventListener("submit", queue);
prompt.addEventListener("keydown", onKey);
prompt.disabled = false;
document.querySelector("[data-action=send]").disabled = false;

window.riachoBoot = {
  // Python takes over: the prompts queued so far (at most one), and no more listeners here.
  take() {
    form.removeEventListener("submit", queue);
    prompt.removeEventListener("keydown", onKey);
    for (const note of column.querySelectorAll("[data-queued]")) note.remove();
    return queued.splice(0);
  },
};

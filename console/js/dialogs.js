// The page's two dialogs: "New agent" (kind, name, retention from /v1/capabilities, one
// Idempotency-Key per request it makes, so a double submit or a retry creates one agent) and
// the confirmation that names what a delete loses.

import { h, showProblemIn } from "./cards.js";
import { KINDS } from "./format.js";

function newKey() {
  if (crypto.randomUUID) return `console-${crypto.randomUUID()}`;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** Ask before a delete: resolves true when the person confirms. */
export function confirmDialog({ title, body, ok }) {
  const dialog = document.getElementById("confirm-dialog");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-body").replaceChildren(...body);
  document.getElementById("confirm-ok").textContent = ok;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    document.getElementById("confirm-cancel").focus();
  });
}

/**
 * The "New agent" dialog. `capabilities()` resolves /v1/capabilities (cached by the caller);
 * `onCreated(view)` gets the new agent.
 */
export function createDialog({ api, capabilities, onCreated, announce }) {
  const dialog = document.getElementById("create-dialog");
  const form = document.getElementById("create-form");
  const kind = document.getElementById("create-kind");
  const name = document.getElementById("create-name");
  const submit = document.getElementById("create-submit");
  const problem = document.getElementById("create-problem");
  const status = document.getElementById("create-status");
  let caps = null;
  let key = null;
  let keyBody = null;
  let submitting = false;

  const radio = (value) => form.querySelector(`input[name="retention"][value="${value}"]`);

  const showProblem = (p) => showProblemIn(problem, p);

  function applyKind() {
    const k = caps?.kinds.find((x) => x.kind === kind.value);
    for (const r of ["recoverable", "temporary"]) {
      const c = k?.retention?.[r] ?? { enabled: false, reason: "unknown kind" };
      radio(r).disabled = !c.enabled;
      document.getElementById(`${r}-reason`).textContent = c.enabled ? "" : `Not available: ${c.reason || "no Tool is deployed"}.`;
    }
    const preferred = k?.default_retention;
    const choice = preferred && !radio(preferred).disabled ? preferred : ["recoverable", "temporary"].find((r) => !radio(r).disabled);
    for (const r of ["recoverable", "temporary"]) radio(r).checked = r === choice;
  }

  function setSubmitting(on) {
    submitting = on;
    submit.setAttribute("aria-disabled", on ? "true" : "false");
    submit.textContent = on ? "Creating…" : "Create agent";
  }

  async function open() {
    showProblem(null);
    status.textContent = "";
    form.reset();
    key = null;
    keyBody = null;
    setSubmitting(false);
    try {
      caps = await capabilities();
    } catch (e) {
      caps = null;
      showProblem(e);
    }
    kind.replaceChildren(...(caps?.kinds ?? []).map((k) => new Option(KINDS[k.kind] || k.kind, k.kind)));
    applyKind();
    dialog.showModal();
    name.focus();
  }

  kind.addEventListener("change", applyKind);
  document.getElementById("create-cancel").addEventListener("click", () => dialog.close());

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (submitting) return;
    const displayName = name.value.trim();
    const retention = form.querySelector('input[name="retention"]:checked')?.value;
    if (!displayName) {
      showProblem({ title: "Name it", detail: "An agent needs a name of 1 to 40 characters." });
      name.setAttribute("aria-invalid", "true");
      name.focus();
      return;
    }
    name.removeAttribute("aria-invalid");
    const body = { kind: kind.value, display_name: displayName, ...(retention ? { retention } : {}) };
    // One key per request: the same request (a double submit, a retry) reuses it, so the
    // API answers it once; a changed request is another agent and gets its own.
    const text = JSON.stringify(body);
    if (!key || keyBody !== text) {
      key = newKey();
      keyBody = text;
    }
    showProblem(null);
    setSubmitting(true);
    status.textContent = `Creating ${displayName}…`;
    try {
      const view = await api.create(body, key, {
        onRetry: (p, ms) => {
          status.textContent = `${p.title}: trying again in ${Math.round(ms / 1000)} s…`;
        },
      });
      dialog.close();
      announce(`Created ${displayName}.`);
      onCreated(view);
    } catch (err) {
      status.textContent = "";
      showProblem(err);
      // Nothing was made by a request the API refused for good: a fresh key next time.
      if (!err.retryable) key = null;
    } finally {
      setSubmitting(false);
    }
  });

  return { open };
}

export { h };

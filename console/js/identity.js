// Who the page calls as, against `snapwake serve` (config.json mode "local"): the "signed in
// as" picker sets the local identity headers, `X-Snapwake-User` and `X-Snapwake-Admin: 1`.
// The server's config.json lists the demo's owners with --demo; anyone else can be typed in.
// The choice is kept for this tab (sessionStorage).

const KEY = "snapwake.local.identity";
const OTHER = "\u0000other";

function stored() {
  try {
    const v = JSON.parse(sessionStorage.getItem(KEY) || "null");
    return v && typeof v.user === "string" && v.user ? { user: v.user, admin: Boolean(v.admin) } : null;
  } catch {
    return null;
  }
}

/**
 * The local session: `headers()` for every request, `current` (or null before a choice),
 * `onChange(current)` called when the person picks someone else.
 */
export function localSession(config, onChange) {
  const users = Array.isArray(config.local?.users) ? config.local.users : [];
  const fallback = config.local?.default_user;
  let current = stored();
  if (!current && fallback) {
    const known = users.find((u) => u.id === fallback);
    current = { user: fallback, admin: Boolean(known?.admin) };
  }

  const form = document.getElementById("local-identity");
  const select = document.getElementById("whoami");
  const other = document.getElementById("other-identity");
  const otherUser = document.getElementById("other-user");
  const otherAdmin = document.getElementById("other-admin");
  form.hidden = false;

  for (const u of users) {
    const o = new Option(u.admin ? `${u.id} (admin)` : u.id, u.id);
    select.add(o);
  }
  select.add(new Option(users.length ? "Someone else…" : "Choose…", OTHER));
  if (!users.length) {
    // No list to pick from: the owner id field is the picker.
    select.hidden = true;
    form.querySelector('label[for="whoami"]').htmlFor = "other-user";
  }

  const known = (c) => c && users.find((u) => u.id === c.user && Boolean(u.admin) === c.admin);
  function show() {
    const k = known(current);
    select.value = k ? k.id : OTHER;
    other.hidden = Boolean(k);
    otherUser.value = k || !current ? "" : current.user;
    otherAdmin.checked = !k && Boolean(current?.admin);
  }

  function choose(next) {
    current = next;
    if (next) sessionStorage.setItem(KEY, JSON.stringify(next));
    else sessionStorage.removeItem(KEY);
    show();
    onChange(current);
  }

  select.addEventListener("change", () => {
    if (select.value === OTHER) {
      other.hidden = false;
      otherUser.focus();
      return;
    }
    const u = users.find((x) => x.id === select.value);
    choose({ user: u.id, admin: Boolean(u.admin) });
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const user = otherUser.value.trim();
    if (!user) {
      otherUser.focus();
      return;
    }
    choose({ user, admin: otherAdmin.checked });
  });
  show();

  return {
    get current() {
      return current;
    },
    get signedIn() {
      return Boolean(current);
    },
    label: () => current?.user ?? "",
    /** The picker's admin flag: `X-Snapwake-Admin: 1` (the server decides what it grants). */
    get admin() {
      return Boolean(current?.admin);
    },
    headers() {
      if (!current) return {};
      const h = { "X-Snapwake-User": current.user };
      if (current.admin) h["X-Snapwake-Admin"] = "1";
      return h;
    },
  };
}

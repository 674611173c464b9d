// The page's views as tabs (WAI-ARIA "Tabs" pattern, automatic activation): one `role=tab`
// button per view, each `aria-controls` its `role=tabpanel`. Tab reaches the selected tab only;
// ←/→ (wrapping), Home and End move to another tab and show its view. The view shown is kept
// in the address (`#usage`), so a reload or a link opens it again.

/**
 * Wire the tabs of `list`. `onSelect(view)` is told when another view is shown (the tab's
 * `data-view`). Returns `{current, select(view)}`.
 */
export function tabs(list, onSelect) {
  const all = [...list.querySelectorAll('[role="tab"]')];
  let current = null;

  function show(tab, { focus = false } = {}) {
    for (const t of all) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
    }
    if (focus) tab.focus();
    const view = tab.dataset.view;
    if (view === current) return;
    current = view;
    const url = new URL(window.location.href);
    url.hash = view === all[0].dataset.view ? "" : view;
    if (url.href !== window.location.href) history.replaceState(history.state, "", url.href.replace(/#$/, ""));
    onSelect(view);
  }

  list.addEventListener("click", (e) => {
    const tab = e.target.closest('[role="tab"]');
    if (tab) show(tab);
  });
  list.addEventListener("keydown", (e) => {
    const i = all.indexOf(e.target);
    if (i < 0) return;
    const j = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: all.length - 1 }[e.key];
    if (j === undefined) return;
    e.preventDefault();
    show(all[(j + all.length) % all.length], { focus: true });
  });

  const byView = (view) => all.find((t) => t.dataset.view === view) || all[0];
  // The view the address names (else the first), shown without telling `onSelect`: the page
  // asks `current` once it is ready.
  const first = byView(window.location.hash.slice(1));
  current = first.dataset.view;
  show(first);
  return {
    get current() {
      return current;
    },
    select: (view) => show(byView(view)),
  };
}

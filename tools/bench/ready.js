// Init script (tools/bench): records, in ms from navigation start (performance.now()),
// - window.__benchReadyAt: when html[data-ready] appears;
// - window.__benchComposerAt: the first animation frame in which textarea[name=prompt] accepts
//   typing (enabled, not read-only, not inert, visible, not covered at its centre). A page
//   without that textarea (the bare PyScript page) stops looking once it is ready (null);
// - window.__benchComposerLostAt: the first time after that, and before data-ready, that the
//   composer was disabled, made read-only or inert, or removed (so typing would stop).
(() => {
  const mark = () => {
    const root = document.documentElement;
    if (window.__benchReadyAt === undefined && root && root.hasAttribute("data-ready")) {
      window.__benchReadyAt = performance.now();
    }
  };
  new MutationObserver(mark).observe(document, {
    attributes: true,
    subtree: true,
    attributeFilter: ["data-ready"],
  });

  const typeable = (el) => {
    if (!el || el.disabled || el.readOnly || el.closest("[inert]")) return false;
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return false;
    if (getComputedStyle(el).visibility !== "visible") return false;
    const x = box.left + box.width / 2;
    const y = box.top + Math.min(box.height / 2, 12);
    if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) return true; // NOTE: off-screen
    const hit = document.elementFromPoint(x, y);
    return hit !== null && (hit === el || el.contains(hit));
  };
  const watchLoss = () => {
    const lost = () => {
      const el = document.querySelector("textarea[name=prompt]");
      return !el || el.disabled || el.readOnly || el.closest("[inert]") !== null;
    };
    const observer = new MutationObserver(() => {
      if (window.__benchReadyAt !== undefined) {
        observer.disconnect();
      } else if (window.__benchComposerLostAt === undefined && lost()) {
        window.__benchComposerLostAt = performance.now();
        observer.disconnect();
      }
    });
    observer.observe(document, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ["disabled", "readonly", "inert", "data-ready"],
    });
  };
  const poll = () => {
    const composer = document.querySelector("textarea[name=prompt]");
    if (typeable(composer)) {
      window.__benchComposerAt = performance.now();
      if (window.__benchReadyAt === undefined) watchLoss();
    } else if (!composer && window.__benchReadyAt !== undefined) {
      window.__benchComposerAt = null; // NOTE: no composer on this page
    } else {
      requestAnimationFrame(poll);
    }
  };
  requestAnimationFrame(poll);
})();

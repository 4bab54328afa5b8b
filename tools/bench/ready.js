// Init script (tools/bench): records when html[data-ready] appears, in ms from navigation start.
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
})();

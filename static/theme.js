// Riacho — the theme the user chose (Settings), applied before the first paint: a classic
// script in <head>, so the page never flashes in the other theme. The page keeps the choice in
// localStorage (app/browser/settings_panel.py) beside the server's copy.
(function () {
  try {
    var theme = localStorage.getItem("riacho.theme");
    if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  } catch (error) {
    // NOTE: storage refused (private mode): the system's theme
  }
})();

// Typeset the pages' mathematics: pymdownx.arithmatex (generic mode) leaves each formula as
// \( ... \) or \[ ... \] inside an element of class "arithmatex"; KaTeX, shipped with the site in
// assets/katex/, renders them in the browser. Nothing is fetched from the network.
(function () {
  function render(root) {
    root.querySelectorAll(".arithmatex").forEach(function (el) {
      renderMathInElement(el, {
        delimiters: [
          { left: "\\[", right: "\\]", display: true },
          { left: "\\(", right: "\\)", display: false },
        ],
        throwOnError: false,
      });
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(function (doc) { render(doc.body); });  // Material's instant navigation
  } else {
    document.addEventListener("DOMContentLoaded", function () { render(document.body); });
  }
})();

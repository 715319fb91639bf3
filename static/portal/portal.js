// Copy buttons: <button class="copy" data-copy="element-id" hidden>. They stay hidden without
// JavaScript (the values are still selectable by hand).
(function () {
  "use strict";

  function fallbackCopy(text) {
    // navigator.clipboard needs a secure context (HTTPS or localhost); plain-HTTP installs use this.
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy failed"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () { return fallbackCopy(text); });
    }
    return fallbackCopy(text);
  }

  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) { return; }
    var label = button.textContent;
    button.hidden = false;
    button.addEventListener("click", function () {
      copy(source.textContent.trim()).then(function () {
        button.textContent = "Copied";
      }, function () {
        button.textContent = "Copy failed";
      }).then(function () {
        window.setTimeout(function () { button.textContent = label; }, 1500);
      });
    });
  });
})();

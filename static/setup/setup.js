// The setup page works without this script. With it, the connection status refreshes in place every few
// seconds while the page is visible (the page's own Refresh link does the same by reloading). Copy
// buttons come from portal.js.
(function () {
  "use strict";
  var INTERVAL_MS = 10000;

  function refresh() {
    var part = document.getElementById("status-part");
    if (!part || document.hidden) { return; }
    var url = part.getAttribute("data-refresh");
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("status-part");
        var current = document.getElementById("status-part");
        if (fresh && current) { current.replaceWith(document.importNode(fresh, true)); }
      })
      .catch(function () { /* offline for a moment: the next round tries again */ });
  }

  window.setInterval(refresh, INTERVAL_MS);
})();

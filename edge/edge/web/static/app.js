// storypost app: progress on long forms, confirmations, copy buttons, the editor's live
// preview and status polling. Every page also works without it.
(function () {
  "use strict";

  // Forms with data-progress: one submit only, and the button says what is happening.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    var question = form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
      return;
    }
    if (form.dataset.sent === "1") {
      event.preventDefault();
      return;
    }
    form.dataset.sent = "1";
    var button = event.submitter || form.querySelector("button[type=submit], button:not([type])");
    var text = (button && button.getAttribute("data-progress")) || form.getAttribute("data-progress");
    if (button && text) {
      // A disabled submitter is not sent: copy its name/value into the form first.
      if (button.name) {
        var carry = document.createElement("input");
        carry.type = "hidden";
        carry.name = button.name;
        carry.value = button.value;
        form.appendChild(carry);
      }
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
      button.innerHTML = '<span class="spinner" aria-hidden="true"></span> ';
      button.appendChild(document.createTextNode(text));
      var live = document.getElementById("progress");
      if (live) live.textContent = text;
    }
  });

  // Copy buttons: data-copy="#id" copies that element's text (or value).
  document.addEventListener("click", function (event) {
    var button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = "value" in source ? source.value : source.textContent.trim();
    var done = function () {
      var old = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = old; }, 1600);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { select(source); });
    } else {
      select(source);
      try { document.execCommand("copy"); done(); } catch (e) { /* selected for the user */ }
    }
  });

  function select(node) {
    if ("select" in node) { node.select(); return; }
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  // The editor's live preview: the page in a sandboxed iframe, scaled to its box.
  var source = document.getElementById("html");
  var live = document.getElementById("live-preview");
  if (source && live) {
    var timer = null;
    var update = function () { live.srcdoc = source.value; };
    source.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(update, 300);
      var dirty = document.getElementById("unsaved");
      if (dirty) dirty.hidden = false;
    });
    // The page came with this HTML in srcdoc; a browser that restored earlier edits into the
    // text area (a reload) gets them drawn.
    if (source.value !== source.defaultValue) update();
  }
  function fit() {
    document.querySelectorAll(".frame iframe").forEach(function (frame) {
      frame.style.transform = "scale(" + frame.parentElement.clientWidth / 1080 + ")";
    });
  }
  window.addEventListener("resize", fit);
  fit();

  // A draft that is rendering: ask for its status until it is done.
  var status = document.querySelector("[data-status-url]");
  if (status && status.getAttribute("data-status") === "rendering") {
    var url = status.getAttribute("data-status-url");
    var poll = function () {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (answer) { return answer.ok ? answer.json() : null; })
        .then(function (draft) {
          if (!draft || draft.status === "rendering") { setTimeout(poll, 2000); return; }
          showStatus(draft);
        })
        .catch(function () { setTimeout(poll, 4000); });
    };
    setTimeout(poll, 1500);
  }

  function showStatus(draft) {
    document.querySelectorAll("[data-draft-status]").forEach(function (badge) {
      badge.className = "badge b-" + draft.status;
      badge.textContent = draft.status;
    });
    var frame = document.getElementById("rendered");
    if (frame && draft.previewUrl) {
      var img = document.createElement("img");
      img.src = draft.previewUrl;
      img.alt = "Rendered preview of version " + draft.version;
      frame.innerHTML = "";
      frame.appendChild(img);
    } else if (frame && draft.status === "failed") {
      frame.innerHTML = "";
      var note = document.createElement("div");
      note.className = "state";
      note.textContent = "Rendering failed: " + (draft.errorMessage || "see the message above");
      frame.appendChild(note);
    }
    var said = document.getElementById("progress");
    if (said) said.textContent = "Version " + draft.version + " is " + draft.status + ".";
  }
  // The calendar: a scheduled post dragged onto a day (it keeps its time) or onto a free
  // queue slot is moved by submitting its own "Move" form with that date and time.
  var calendar = document.querySelector(".cal[data-movable]");
  if (calendar) {
    var dragged = null;
    var target = function (event) {
      var node = event.target instanceof Element ? event.target : null;
      return node && (node.closest(".cal-slot") || node.closest(".cal-day"));
    };
    var clear = function () {
      calendar.querySelectorAll(".cal-drop").forEach(function (n) { n.classList.remove("cal-drop"); });
    };
    calendar.addEventListener("dragstart", function (event) {
      var node = event.target instanceof Element ? event.target.closest("[data-move]") : null;
      if (!node) return;
      dragged = node;
      node.classList.add("cal-dragging");
      event.dataTransfer.effectAllowed = "move";
      event.dataTransfer.setData("text/plain", node.getAttribute("data-move"));
    });
    calendar.addEventListener("dragend", function () {
      if (dragged) dragged.classList.remove("cal-dragging");
      dragged = null;
      clear();
    });
    calendar.addEventListener("dragover", function (event) {
      var over = dragged && target(event);
      if (!over) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = "move";
      if (!over.classList.contains("cal-drop")) { clear(); over.classList.add("cal-drop"); }
    });
    calendar.addEventListener("drop", function (event) {
      var over = dragged && target(event);
      if (!over) return;
      event.preventDefault();
      var form = dragged.querySelector("form");
      var to = over.classList.contains("cal-slot")
        ? over.getAttribute("data-local")
        : over.getAttribute("data-day") + "T" + dragged.getAttribute("data-time");
      var input = form && form.querySelector("input[name=to]");
      var queue = form && form.querySelector("input[name=queue]");
      var moving = dragged;
      clear();
      if (!input || input.value === to) return;
      input.value = to;
      // Onto a free slot of the post's own account: the post takes that slot of the queue
      // (reschedule-post with date and queueName), so no later queued post gets it too.
      if (queue) {
        var own = over.classList.contains("cal-slot") &&
          over.getAttribute("data-account") === dragged.getAttribute("data-account");
        queue.value = own ? over.getAttribute("data-queue") : "";
      }
      moving.classList.add("cal-moving");
      if (form.requestSubmit) form.requestSubmit(); else form.submit();
    });
  }
})();

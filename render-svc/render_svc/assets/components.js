// storypost story components: draws the photoapp-* elements of a page as native-looking
// stickers. Installed as `install(config)` by each render context's init script, before the
// page's own scripts (so it is compiled while the context waits for its render): it registers
// our fonts and defines window[config.key] = {collect, draw, confirm}, the key being random
// per context. render-svc reads the attributes (collect), checks them in Python, then asks
// draw() to draw the valid stickers and measure them, and confirm() to check the reading and
// measure again once the page settled. Every sticker is drawn inside a closed
// shadow root, so page CSS cannot restyle it.
(config) => {
  "use strict";
  if (window[config.key]) return;
  const KINDS = ["hashtag", "mention", "location", "link", "poll", "question", "quiz",
    "countdown", "emoji-slider"];
  const RAINBOW = ["#FF3B30", "#FF9500", "#FFCC00", "#34C759", "#00C7BE", "#007AFF", "#AF52DE"];
  const GRADIENT = "linear-gradient(90deg,#FF8A00,#E52E71)";
  const POLL = {
    black: ["#3A3A3A", "#111111", "#262626"], pink: ["#FF7EB6", "#F0287D", "#E0196E"],
    lavender: ["#CDB4FF", "#9F7BEE", "#8A63E0"], purple: ["#A855F7", "#6D28D9", "#6D28D9"],
    orange: ["#FFA24C", "#FF6A00", "#F26500"], green: ["#5EDC7A", "#16A34A", "#15963F"],
    blue: ["#5AB8FF", "#0A7CFF", "#0A6FE8"],
  };
  // [background, text, answer field, hint] of the question sticker.
  const QUESTION = {
    white: ["#FFFFFF", "#262626", "#EFEFEF", "#8E8E8E"],
    black: ["#262626", "#FFFFFF", "rgba(255,255,255,.14)", "rgba(255,255,255,.62)"],
    pink: ["linear-gradient(160deg,#FF7EB6,#F0287D)", "#FFFFFF", "#FFFFFF", "#8E8E8E"],
    lavender: ["linear-gradient(160deg,#CDB4FF,#9F7BEE)", "#FFFFFF", "#FFFFFF", "#8E8E8E"],
    purple: ["linear-gradient(160deg,#A855F7,#6D28D9)", "#FFFFFF", "#FFFFFF", "#8E8E8E"],
    orange: ["linear-gradient(160deg,#FFA24C,#FF6A00)", "#FFFFFF", "#FFFFFF", "#8E8E8E"],
    green: ["linear-gradient(160deg,#5EDC7A,#16A34A)", "#FFFFFF", "#FFFFFF", "#8E8E8E"],
    blue: ["linear-gradient(160deg,#5AB8FF,#0A7CFF)", "#FFFFFF", "#FFFFFF", "#8E8E8E"],
  };
  // [background, text, digit box] of the countdown sticker.
  const COUNTDOWN = {
    black: ["#262626", "#FFFFFF", "rgba(255,255,255,.14)"],
    white: ["#FFFFFF", "#262626", "#EFEFEF"],
    purple: ["linear-gradient(160deg,#A855F7,#6D28D9)", "#FFFFFF", "rgba(255,255,255,.22)"],
    red: ["linear-gradient(160deg,#FF5A5F,#E11D48)", "#FFFFFF", "rgba(255,255,255,.22)"],
    orange: ["linear-gradient(160deg,#FFA24C,#FF6A00)", "#FFFFFF", "rgba(255,255,255,.22)"],
    yellow: ["linear-gradient(160deg,#FFE259,#FFC300)", "#262626", "rgba(0,0,0,.08)"],
    green: ["linear-gradient(160deg,#5EDC7A,#16A34A)", "#FFFFFF", "rgba(255,255,255,.22)"],
    blue: ["linear-gradient(160deg,#5AB8FF,#0A7CFF)", "#FFFFFF", "rgba(255,255,255,.22)"],
  };
  const QUIZ_HEAD = "linear-gradient(90deg,#FF3B6B,#FF9A3C,#FFD23F,#3DD68C,#3AA0FF)";
  const PIN = '<svg viewBox="0 0 24 24"><path fill="currentColor" d="M12 1.8c-4.1 0-7.4 3.2-7.4 7.3 0 5.5 7.4 13.1 7.4 13.1s7.4-7.6 7.4-13.1c0-4.1-3.3-7.3-7.4-7.3zm0 10.2a2.9 2.9 0 1 1 0-5.8 2.9 2.9 0 0 1 0 5.8z"/></svg>';
  const CHAIN = '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.8" stroke-linecap="round" stroke-linejoin="round"><path d="M10 13.5a4.6 4.6 0 0 0 6.6.4l3-3a4.6 4.6 0 0 0-6.5-6.5l-1.7 1.7"/><path d="M14 10.5a4.6 4.6 0 0 0-6.6-.4l-3 3a4.6 4.6 0 0 0 6.5 6.5l1.7-1.7"/></svg>';

  const CSS = `
    :host { display: inline-block; flex: none; vertical-align: top; line-height: 1;
      font-family: StorypostSans, "DejaVu Sans", "Noto Color Emoji", sans-serif;
      -webkit-font-smoothing: antialiased; text-align: left; }
    * { box-sizing: border-box; margin: 0; }
    .pill { height: 177px; max-width: 1000px; display: inline-flex; align-items: center;
      gap: 22px; padding: 0 54px; border-radius: 44px; background: #FFFFFF;
      box-shadow: 0 6px 22px rgba(0,0,0,.18); font-weight: 700; font-size: 80px;
      letter-spacing: -1px; text-transform: uppercase; white-space: nowrap; color: #262626; }
    .pill .t { overflow: hidden; text-overflow: ellipsis; padding: 10px 0; }
    .pill .icon { width: 80px; height: 80px; flex: none; display: block; }
    .pill .icon svg { width: 100%; height: 100%; display: block; }
    .grad { background: ${GRADIENT}; -webkit-background-clip: text; background-clip: text;
      color: transparent; }
    .pill.gray { background: rgba(110,110,110,.78); color: #FFFFFF; }
    .pill.black { background: #000000; color: #FFFFFF; }
    .pill.orange { background: linear-gradient(135deg,#FFB13B,#FF5F2E); color: #FFFFFF; }
    .card { width: 760px; border-radius: 44px; overflow: hidden; background: #FFFFFF;
      box-shadow: 0 8px 28px rgba(0,0,0,.22); color: #262626; }
    .head { padding: 46px 48px 42px; color: #FFFFFF; font-weight: 700; font-size: 58px;
      line-height: 1.15; text-align: center; overflow-wrap: anywhere; }
    .opts { padding: 34px 36px 38px; display: flex; flex-direction: column; gap: 22px; }
    .opt { height: 116px; border-radius: 30px; background: #F2F2F2; display: flex;
      align-items: center; justify-content: center; padding: 0 34px; font-weight: 700;
      font-size: 50px; white-space: nowrap; overflow: hidden; }
    .opt .ot { overflow: hidden; text-overflow: ellipsis; }
    .quiz .opt { justify-content: flex-start; gap: 28px; background: #FFFFFF;
      border: 4px solid #E6E6E6; color: #262626; }
    .quiz .letter { width: 74px; height: 74px; flex: none; border-radius: 50%;
      border: 4px solid #DBDBDB; display: flex; align-items: center; justify-content: center;
      font-size: 38px; color: #262626; }
    .question { padding: 56px 48px 48px; text-align: center; }
    .question .q { font-weight: 700; font-size: 60px; line-height: 1.15;
      overflow-wrap: anywhere; margin-bottom: 40px; }
    .question .field { height: 132px; border-radius: 30px; display: flex; align-items: center;
      justify-content: center; font-size: 46px; font-weight: 400; }
    .countdown { padding: 50px 48px 46px; text-align: center; }
    .countdown .title { font-weight: 700; font-size: 54px; line-height: 1.15;
      text-transform: uppercase; letter-spacing: 1px; overflow-wrap: anywhere;
      margin-bottom: 34px; }
    .digits { display: flex; justify-content: center; gap: 20px; }
    .unit { display: flex; flex-direction: column; align-items: center; gap: 14px; }
    .num { min-width: 160px; height: 150px; padding: 0 18px; border-radius: 28px;
      font-weight: 700; font-size: 96px; line-height: 150px; text-align: center; }
    .lab { font-weight: 700; font-size: 30px; text-transform: uppercase; opacity: .75; }
    .when { margin-top: 30px; font-size: 34px; font-weight: 400; opacity: .85; }
    .slider { padding: 56px 56px 80px; text-align: center; }
    .slider .q { font-weight: 700; font-size: 56px; line-height: 1.15;
      overflow-wrap: anywhere; margin-bottom: 88px; }
    .track { position: relative; height: 22px; border-radius: 11px; margin: 0 26px;
      background: rgba(128,128,128,.28); }
    .fill { position: absolute; left: 0; top: 0; bottom: 0; width: 38%; border-radius: 11px;
      background: ${GRADIENT}; }
    .thumb { position: absolute; left: 38%; top: 50%; transform: translate(-50%, -50%);
      font-size: 112px; line-height: 1; font-family: "Noto Color Emoji", sans-serif; }
  `;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(CSS);

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }
  function icon(svg, color) {
    const box = el("span", "icon");
    box.innerHTML = svg;  // a constant of this script, never page data
    if (color) box.style.color = color;
    return box;
  }
  function rainbowText(text) {
    const span = el("span", "t");
    Array.from(text).forEach((ch, i) => {
      const letter = el("span", null, ch);
      letter.style.color = RAINBOW[i % RAINBOW.length];
      span.appendChild(letter);
    });
    return span;
  }

  // Pill stickers (177 px tall): hashtag, mention, location, link.
  function pill(text, design, svg, accent, gradient) {
    const root = el("div", "pill");
    if (design === "gray" || design === "black" || design === "orange") {
      root.classList.add(design);
      if (svg) root.appendChild(icon(svg));
      root.appendChild(el("span", "t", text));
    } else if (design === "rainbow") {
      if (svg) root.appendChild(icon(svg, RAINBOW[0]));
      root.appendChild(rainbowText(text));
    } else {
      if (svg) root.appendChild(icon(svg, accent));
      const t = el("span", "t", text);
      if (gradient) {
        t.classList.add("grad");
        t.style.backgroundImage = gradient;
      } else {
        t.style.color = accent;
      }
      root.appendChild(t);
    }
    return root;
  }

  function linkText(v) {
    if (v.text) return v.text;
    try {
      return new URL(v.url).hostname.replace(/^www\./, "");
    } catch (e) {
      return v.url;
    }
  }

  function options(list, cls, ink, lettered) {
    const box = el("div", "opts");
    list.forEach((text, i) => {
      const row = el("div", "opt");
      if (lettered) row.appendChild(el("span", "letter", String.fromCharCode(65 + i)));
      const label = el("span", "ot", text);
      if (ink) label.style.color = ink;
      row.appendChild(label);
      box.appendChild(row);
    });
    return box;
  }

  function poll(v) {
    const theme = POLL[v.color] || POLL.black;
    const root = el("div", "card poll");
    if (v.question) {
      const head = el("div", "head", v.question);
      head.style.background = `linear-gradient(135deg,${theme[0]},${theme[1]})`;
      root.appendChild(head);
    }
    root.appendChild(options(v.options, "", theme[2], false));
    return root;
  }

  function quiz(v) {
    const root = el("div", "card quiz");
    const head = el("div", "head", v.question || "Quiz");
    head.style.background = QUIZ_HEAD;
    root.appendChild(head);
    root.appendChild(options(v.options, "", null, true));
    return root;
  }

  function question(v) {
    const theme = QUESTION[v.color] || QUESTION.white;
    const root = el("div", "card question");
    root.style.background = theme[0];
    const q = el("div", "q", v.question);
    q.style.color = theme[1];
    const field = el("div", "field", "Type something\u2026");
    field.style.background = theme[2];
    field.style.color = theme[3];
    root.append(q, field);
    return root;
  }

  function pad(n) {
    return n < 10 ? "0" + n : String(n);
  }

  function countdown(v) {
    const theme = COUNTDOWN[v.color] || COUNTDOWN.black;
    const root = el("div", "card countdown");
    root.style.background = theme[0];
    root.style.color = theme[1];
    root.appendChild(el("div", "title", v.title));
    const left = Math.max(0, Math.floor((v["end-time"] - nowMs) / 60000));
    const parts = [[Math.floor(left / 1440), "days"], [Math.floor(left / 60) % 24, "hours"],
      [left % 60, "minutes"]];
    const digits = el("div", "digits");
    for (const [value, name] of parts) {
      const unit = el("div", "unit");
      const num = el("div", "num", pad(value));
      num.style.background = theme[2];
      unit.append(num, el("div", "lab", name));
      digits.appendChild(unit);
    }
    root.appendChild(digits);
    const when = new Intl.DateTimeFormat("en-US", {
      timeZone: "UTC", month: "short", day: "numeric", year: "numeric", hour: "2-digit",
      minute: "2-digit", hourCycle: "h23",
    }).format(new Date(v["end-time"]));
    root.appendChild(el("div", "when", when + " UTC"));
    return root;
  }

  function slider(v) {
    const root = el("div", "card slider");
    root.style.background = v.color;
    if (v.question) {
      const q = el("div", "q", v.question);
      q.style.color = v["text-color"];
      root.appendChild(q);
    }
    const track = el("div", "track");
    track.append(el("div", "fill"), el("div", "thumb", v.emoji));
    root.appendChild(track);
    return root;
  }

  const DRAW = {
    hashtag: (v) => pill("#" + v.hashtag, v.design, null, null, GRADIENT),
    mention: (v) => pill("@" + v.username, v.design, null, null,
      "linear-gradient(90deg,#F58529,#DD2A7B)"),
    location: (v) => pill(v.location, v.design, PIN, "#8A3FFC",
      "linear-gradient(90deg,#A033FF,#6A1FD0)"),
    link: (v) => pill(linkText(v), v.design, CHAIN, "#0095F6", null),
    poll, question, quiz, countdown, "emoji-slider": slider,
  };

  let found = [];
  // The render's time (render-svc's clock), for the countdown.
  let nowMs = Date.now();

  // render-svc reads and draws the elements while the page settles (docs/render.md
  // "Settling"). What collect() read holds unless the page adds, removes, moves or changes
  // the attributes of a photoapp-* element before it settled; draw() or confirm() then
  // report the change, and render-svc reads and draws the settled page again. The
  // observer's class is taken before the page's scripts run.
  const Watcher = MutationObserver;
  const isElement = (node) => node.nodeType === 1 && node.localName.startsWith("photoapp-");
  const holdsElement = (node) => isElement(node) ||
    (node.nodeType === 1 && Array.from(node.getElementsByTagName("*")).some(isElement));
  const matters = (record) => record.type === "attributes" ? isElement(record.target) :
    Array.from(record.addedNodes).some(holdsElement) ||
    Array.from(record.removedNodes).some(holdsElement);
  let changed = false;
  const watcher = new Watcher((records) => { changed = changed || records.some(matters); });

  // The page's own fonts are part of settling: read the elements once they are ready.
  async function collect() {
    await document.fonts.ready;
    found = Array.from(document.querySelectorAll("*"))
      .filter((node) => node.localName.startsWith("photoapp-"));
    changed = false;
    watcher.disconnect();
    watcher.observe(document, { subtree: true, childList: true, attributes: true });
    const stickerSelector = KINDS.map((k) => "photoapp-" + k).join(",");
    return found.map((node, index) => ({
      index,
      tag: node.localName,
      attributes: Array.from(node.attributes).map((a) => [a.name, a.value]),
      nested: KINDS.includes(node.localName.slice(9)) && node.parentElement !== null &&
        node.parentElement.closest(stickerSelector) !== null,
      pageShadow: node.shadowRoot !== null,
    }));
  }

  // Registered when the document is created, so they are usually loaded before the render
  // asks; a page that replaced its document.fonts gets them again when drawing.
  function registerFonts() {
    let faces = Array.from(document.fonts).filter(
      (face) => face.family === "StorypostSans" && face.status !== "error");
    if (faces.length < 2) {
      faces = [
        new FontFace("StorypostSans", `local("DejaVu Sans Bold"), local("DejaVuSans-Bold"), url(${config.fonts.bold})`, { weight: "700" }),
        new FontFace("StorypostSans", `local("DejaVu Sans"), local("DejaVuSans"), url(${config.fonts.regular})`, { weight: "400" }),
      ];
      for (const face of faces) document.fonts.add(face);
    }
    return faces;
  }

  // A changed page is drawn again on the same nodes: our roots (by node) are kept to be
  // redrawn.
  const drawn = new Map();
  let ownSheet = null;

  const pending = () => changed || watcher.takeRecords().some(matters);

  // `watched`: collect() ran before the page settled, so a change since is reported (and
  // nothing drawn); while it still settles the watch goes on until confirm().
  async function draw(plans, video, now, watched, settling) {
    nowMs = now;
    await Promise.all(registerFonts().map((face) => face.load().catch(() => null)));
    if (watched && pending()) {
      watcher.disconnect();
      return { changed: true };
    }
    if (!settling) watcher.disconnect();
    // No text caret in the capture (a focused field's caret blinks): render-svc captures
    // without Playwright's own caret hiding, which costs two script runs in every frame. The
    // :not() of five ids outweighs any selector of the page's own.
    if (ownSheet === null) {
      ownSheet = new CSSStyleSheet();
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, ownSheet];
    }
    ownSheet.replaceSync(
      "*:not(#sp-a#sp-b#sp-c#sp-d#sp-e) { caret-color: transparent !important; }" +
      // The video shows through the overlay: the page's own background must not hide it.
      (video ? "html, body { background: transparent !important; }" : ""));
    for (const root of drawn.values()) root.replaceChildren();
    const failed = [];
    for (const plan of plans) {
      const node = found[plan.index];
      if (!node) continue;
      let root = drawn.get(node);
      if (!root) {
        if (node.shadowRoot) continue;
        try {
          root = node.attachShadow({ mode: "closed" });
        } catch (error) {
          failed.push(plan.index);
          continue;
        }
        root.adoptedStyleSheets = [sheet];
        drawn.set(node, root);
      }
      root.appendChild(DRAW[plan.kind](plan.values));
    }
    return { boxes: await measure(plans), failed };
  }

  // Once the page settled after draw(plans, ..., settling): null when it changed its
  // elements meanwhile, else the boxes now and whether the page had scrolled away.
  async function confirm(plans) {
    const moved = pending();
    watcher.disconnect();
    if (moved) return null;
    const scrolled = window.scrollX !== 0 || window.scrollY !== 0;
    return { boxes: await measure(plans), scrolled };
  }

  async function measure(plans) {
    await document.fonts.ready;
    window.scrollTo(0, 0);
    const boxes = {};
    for (const plan of plans) {
      const node = found[plan.index];
      const rect = node ? node.getBoundingClientRect() : null;
      boxes[plan.index] = rect && rect.width > 0 && rect.height > 0 ?
        { x: rect.x, y: rect.y, width: rect.width, height: rect.height } : null;
    }
    return boxes;
  }

  Object.defineProperty(window, config.key, {
    value: Object.freeze({ collect, draw, confirm }), enumerable: false, configurable: false,
  });
  if (document.fonts) registerFonts().forEach((face) => face.load().catch(() => null));
}

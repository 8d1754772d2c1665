// A Server-Sent Events parser that follows the WHATWG "event stream
// interpretation" rules, fed with text as it arrives from fetch. It exists
// because EventSource cannot send an Authorization header, and a seat's
// stream needs one.

/**
 * Incremental SSE parser. push() takes any slice of the stream (an event may
 * be split anywhere, even between the CR and LF of one line ending) and
 * returns the messages completed by it.
 */
export class SseParser {
  constructor() {
    this._line = ""; // the current, unfinished line
    this._afterCR = false; // the last chunk ended in CR: a leading LF is part of it
    this._data = [];
    this._hasData = false;
    this._type = "";
    /** The last `id:` seen, as the spec keeps it across messages. */
    this.lastEventId = "";
    /** The last valid `retry:` value in milliseconds, or undefined. */
    this.retry = undefined;
    /** How many comment lines (keep-alives) were seen. */
    this.comments = 0;
  }

  /**
   * @param {string} text
   * @returns {{type: string, data: string, id: string}[]}
   */
  push(text) {
    const out = [];
    let start = 0;
    let i = 0;
    if (this._afterCR && text.length > 0) {
      this._afterCR = false;
      if (text[0] === "\n") {
        start = i = 1;
      }
    }
    for (; i < text.length; i++) {
      const ch = text[i];
      if (ch !== "\n" && ch !== "\r") continue;
      const line = this._line + text.slice(start, i);
      this._line = "";
      if (ch === "\r") {
        if (i + 1 < text.length) {
          if (text[i + 1] === "\n") i++;
        } else {
          this._afterCR = true; // the LF may come with the next chunk
        }
      }
      start = i + 1;
      this._processLine(line, out);
    }
    this._line += text.slice(start);
    return out;
  }

  /**
   * The stream ended. Per the spec, an event whose blank line never arrived is
   * discarded (a connection cut mid-event must not yield half an event).
   */
  finish() {
    this._line = "";
    this._afterCR = false;
    this._data = [];
    this._hasData = false;
    this._type = "";
    return [];
  }

  _processLine(line, out) {
    if (line === "") {
      if (this._hasData) {
        out.push({ type: this._type || "message", data: this._data.join("\n"), id: this.lastEventId });
      }
      this._data = [];
      this._hasData = false;
      this._type = "";
      return;
    }
    if (line[0] === ":") {
      this.comments++;
      return;
    }
    const colon = line.indexOf(":");
    let field = line;
    let value = "";
    if (colon >= 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value[0] === " ") value = value.slice(1);
    }
    switch (field) {
      case "data":
        this._data.push(value);
        this._hasData = true;
        break;
      case "event":
        this._type = value;
        break;
      case "id":
        if (!value.includes("\0")) this.lastEventId = value;
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) this.retry = Number(value);
        break;
      default:
        break; // unknown fields are ignored, as the spec says
    }
  }
}

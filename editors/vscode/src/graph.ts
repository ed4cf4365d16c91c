// The `jaxpr.server.graph` request and the messages between the dataflow
// graph's webview and the editor. Kept free of the `vscode` module so it can
// be unit-tested with plain Node.

/** The command the server advertises (workspace/executeCommand). */
export const SERVER_GRAPH_COMMAND = 'jaxpr.server.graph';

export interface GraphParams {
  command: typeof SERVER_GRAPH_COMMAND;
  arguments: [{ uri: string; nonce: string }];
}

export function graphParams(uri: string, nonce: string): GraphParams {
  return { command: SERVER_GRAPH_COMMAND, arguments: [{ uri, nonce }] };
}

/** A nonce for the page's inline script and style: 32 letters and digits. */
export function makeNonce(random: () => number = Math.random): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let nonce = '';
  for (let i = 0; i < 32; i++) {
    nonce += chars[Math.floor(random() * chars.length)];
  }
  return nonce;
}

export type GraphOutcome = { ok: true; html: string; equations: number } | { ok: false; message: string };

/** Reads the server's answer, `{ "html": "...", "equations": N }`. */
export function parseGraphResult(result: unknown): GraphOutcome {
  if (result !== null && typeof result === 'object') {
    const { html, equations } = result as { html?: unknown; equations?: unknown };
    if (typeof html === 'string' && html.startsWith('<!DOCTYPE html>') && typeof equations === 'number') {
      return { ok: true, html, equations };
    }
  }
  return { ok: false, message: 'the server answered without a graph' };
}

/** A range of the text: 0-based lines, UTF-16 columns. */
export interface TextSpan {
  startLine: number;
  startCharacter: number;
  endLine: number;
  endCharacter: number;
}

/**
 * The node the user selected in the webview (`{type: 'select', node,
 * range: [startLine, startCharacter, endLine, endCharacter]}`), or
 * undefined for any other message.
 */
export function selectedSpan(message: unknown): TextSpan | undefined {
  if (message === null || typeof message !== 'object') {
    return undefined;
  }
  const m = message as { type?: unknown; range?: unknown };
  if (m.type !== 'select' || !Array.isArray(m.range) || m.range.length !== 4) {
    return undefined;
  }
  if (!m.range.every((v) => Number.isInteger(v) && v >= 0)) {
    return undefined;
  }
  const [startLine, startCharacter, endLine, endCharacter] = m.range as number[];
  return { startLine, startCharacter, endLine, endCharacter };
}

/** The message that makes the webview select the equation at a position. */
export function revealMessage(line: number, character: number): { type: 'reveal'; line: number; character: number } {
  return { type: 'reveal', line, character };
}

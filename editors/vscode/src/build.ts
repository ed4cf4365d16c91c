// The `jaxpr.server.build` request: what is sent and how the answer is read.
// Kept free of the `vscode` module so it can be unit-tested with plain Node.

/** The command the server advertises (workspace/executeCommand). */
export const SERVER_BUILD_COMMAND = 'jaxpr.server.build';

export type Emit = 'stablehlo' | 'native';

export interface BuildArguments {
  /** The document URI, as VS Code prints it (`file:///...`). */
  uri: string;
  emit: Emit;
}

export interface BuildParams {
  command: typeof SERVER_BUILD_COMMAND;
  arguments: [BuildArguments];
}

export const EMIT_LABEL: Record<Emit, string> = {
  stablehlo: 'StableHLO',
  native: 'native library',
};

export function buildParams(uri: string, emit: Emit): BuildParams {
  return { command: SERVER_BUILD_COMMAND, arguments: [{ uri, emit }] };
}

export type BuildOutcome = { ok: true; path: string } | { ok: false; message: string };

/** Reads the server's answer, `{ "path": "<output path>" }`. */
export function parseBuildResult(result: unknown): BuildOutcome {
  if (result !== null && typeof result === 'object') {
    const p = (result as { path?: unknown }).path;
    if (typeof p === 'string' && p.length > 0) {
      return { ok: true, path: p };
    }
  }
  return { ok: false, message: `the server answered without an output path (${safeJson(result)})` };
}

/** A readable message for a rejected request (a JSON-RPC ResponseError or anything else). */
export function describeError(err: unknown): string {
  if (err !== null && typeof err === 'object') {
    const e = err as { message?: unknown; code?: unknown; data?: unknown };
    let msg = typeof e.message === 'string' && e.message !== '' ? e.message : safeJson(err);
    if (typeof e.data === 'string' && e.data !== '' && !msg.includes(e.data)) {
      msg += `\n${e.data}`;
    }
    return msg;
  }
  return String(err);
}

/** Whether a path returned by the server is a URI (`file:///x.mlir`) rather than a file path. */
export function isUriString(p: string): boolean {
  // Two letters or more before the colon, so `C:\out\x.so` stays a path.
  return /^[a-zA-Z][a-zA-Z0-9+.-]+:\/\//.test(p);
}

function safeJson(v: unknown): string {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s;
  } catch {
    return String(v);
  }
}

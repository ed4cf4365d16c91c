// Tracing sessions from VS Code: the `jaxpr.server.traceAgain` request, the
// `jaxpr.trace.*` settings handed to the server, and how its answer is read.
// Kept free of the `vscode` module so it can be unit-tested with plain Node.

/** The command the server advertises; the palette command is `jaxpr.traceAgain`. */
export const SERVER_TRACE_COMMAND = 'jaxpr.server.traceAgain';

export interface TraceParams {
  command: typeof SERVER_TRACE_COMMAND;
  arguments: [{ uri: string }];
}

export function traceParams(uri: string): TraceParams {
  return { command: SERVER_TRACE_COMMAND, arguments: [{ uri }] };
}

/** What the server reads from initializationOptions (`{"trace": ...}`). */
export interface TraceSettings {
  onSave: boolean;
  python: string;
  timeout: number;
}

/** The settings from `jaxpr.trace.*` (`get` reads one key of the `jaxpr` section), with defaults. */
export function traceSettings(get: (key: string) => unknown): TraceSettings {
  const onSave = get('trace.onSave');
  const python = get('trace.python');
  const timeout = get('trace.timeout');
  return {
    onSave: onSave === true,
    python: typeof python === 'string' && python.trim() !== '' ? python.trim() : 'python3',
    timeout: typeof timeout === 'number' && timeout > 0 ? timeout : 120,
  };
}

export type TraceOutcome = { ok: true; message: string } | { ok: false; message: string };

/** Reads the server's answer `{ session, status, message, functions, errors }`. */
export function parseTraceResult(result: unknown): TraceOutcome {
  if (result === null || typeof result !== 'object') {
    return { ok: false, message: 'the server answered without a session' };
  }
  const r = result as { status?: unknown; message?: unknown; functions?: unknown; errors?: unknown; session?: unknown };
  const n = typeof r.functions === 'number' ? r.functions : 0;
  const e = typeof r.errors === 'number' ? r.errors : 0;
  const summary = `${n} function${n === 1 ? '' : 's'} traced, ${e} error${e === 1 ? '' : 's'}`;
  if (r.status === 'ok') {
    return { ok: true, message: `${summary} (${String(r.session ?? '')})` };
  }
  const why = typeof r.message === 'string' && r.message !== '' ? r.message : String(r.status);
  return { ok: false, message: `${why} (${summary})` };
}

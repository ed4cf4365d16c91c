import * as assert from 'assert/strict';
import { test } from 'node:test';
import { SERVER_TRACE_COMMAND, parseTraceResult, traceParams, traceSettings } from '../trace';

test('trace parameters follow the jaxpr.server.traceAgain contract', () => {
  assert.equal(SERVER_TRACE_COMMAND, 'jaxpr.server.traceAgain');
  assert.deepEqual(traceParams('file:///w/train.py'), {
    command: 'jaxpr.server.traceAgain',
    arguments: [{ uri: 'file:///w/train.py' }],
  });
});

test('trace settings fall back to their defaults on missing or invalid values', () => {
  assert.deepEqual(traceSettings(() => undefined), { onSave: false, python: 'python3', timeout: 120 });
  const bad: Record<string, unknown> = { 'trace.onSave': 'yes', 'trace.python': '  ', 'trace.timeout': -5 };
  assert.deepEqual(traceSettings((k) => bad[k]), { onSave: false, python: 'python3', timeout: 120 });
  const good: Record<string, unknown> = { 'trace.onSave': true, 'trace.python': ' /v/bin/python ', 'trace.timeout': 9.5 };
  assert.deepEqual(traceSettings((k) => good[k]), { onSave: true, python: '/v/bin/python', timeout: 9.5 });
});

test('the server answer is read as success only with status ok', () => {
  assert.deepEqual(parseTraceResult({ status: 'ok', session: '/w/.jaxpr-session', functions: 1, errors: 0 }), {
    ok: true,
    message: '1 function traced, 0 errors (/w/.jaxpr-session)',
  });
  const r = parseTraceResult({ status: 'no-jax', message: '`python3` cannot import jax', functions: 0, errors: 0 });
  assert.deepEqual(r, { ok: false, message: '`python3` cannot import jax (0 functions traced, 0 errors)' });
  assert.equal(parseTraceResult(null).ok, false);
  assert.equal(parseTraceResult({ status: 'timeout' }).ok, false);
});

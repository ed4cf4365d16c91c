// The graph command's request and the webview's messages.

import * as assert from 'assert/strict';
import { test } from 'node:test';
import { SERVER_GRAPH_COMMAND, graphParams, makeNonce, parseGraphResult, revealMessage, selectedSpan } from '../graph';

test('the request names the document and the nonce', () => {
  assert.deepEqual(graphParams('file:///w/a.jaxpr', 'abc123'), {
    command: SERVER_GRAPH_COMMAND,
    arguments: [{ uri: 'file:///w/a.jaxpr', nonce: 'abc123' }],
  });
  assert.equal(SERVER_GRAPH_COMMAND, 'jaxpr.server.graph');
});

test('nonces are 32 letters and digits, and differ', () => {
  const a = makeNonce();
  assert.match(a, /^[A-Za-z0-9]{32}$/);
  assert.notEqual(a, makeNonce());
});

test('the answer is a page and a count, or an error', () => {
  assert.deepEqual(parseGraphResult({ html: '<!DOCTYPE html>\n<html></html>', equations: 3 }), {
    ok: true,
    html: '<!DOCTYPE html>\n<html></html>',
    equations: 3,
  });
  assert.equal(parseGraphResult({ html: 'not a page', equations: 3 }).ok, false);
  assert.equal(parseGraphResult(null).ok, false);
  assert.equal(parseGraphResult({ path: '/x' }).ok, false);
});

test('a select message gives a span; anything else none', () => {
  assert.deepEqual(selectedSpan({ type: 'select', node: 4, range: [3, 2, 3, 40] }), {
    startLine: 3,
    startCharacter: 2,
    endLine: 3,
    endCharacter: 40,
  });
  assert.equal(selectedSpan({ type: 'ready' }), undefined);
  assert.equal(selectedSpan({ type: 'select', range: [1, 2, 3] }), undefined);
  assert.equal(selectedSpan({ type: 'select', range: [1, -2, 3, 4] }), undefined);
  assert.equal(selectedSpan({ type: 'select', range: [1, 'a', 3, 4] }), undefined);
  assert.equal(selectedSpan('select'), undefined);
  assert.deepEqual(revealMessage(7, 9), { type: 'reveal', line: 7, character: 9 });
});

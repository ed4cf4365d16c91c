import * as assert from 'assert/strict';
import { test } from 'node:test';
import { SERVER_BUILD_COMMAND, buildParams, describeError, isUriString, parseBuildResult } from '../build';

test('build parameters follow the jaxpr.server.build contract', () => {
  assert.equal(SERVER_BUILD_COMMAND, 'jaxpr.server.build');
  assert.deepEqual(buildParams('file:///w/model.jaxpr', 'stablehlo'), {
    command: 'jaxpr.server.build',
    arguments: [{ uri: 'file:///w/model.jaxpr', emit: 'stablehlo' }],
  });
  assert.deepEqual(buildParams('untitled:Untitled-1', 'native').arguments, [{ uri: 'untitled:Untitled-1', emit: 'native' }]);
});

test('a result with a path is success, anything else is an error', () => {
  assert.deepEqual(parseBuildResult({ path: '/w/model.mlir' }), { ok: true, path: '/w/model.mlir' });
  for (const bad of [null, undefined, 'x', {}, { path: '' }, { path: 3 }]) {
    const r = parseBuildResult(bad);
    assert.equal(r.ok, false, JSON.stringify(bad));
    assert.match(!r.ok ? r.message : '', /without an output path/);
  }
});

test('JSON-RPC errors are described by their message (and string data)', () => {
  assert.equal(describeError({ code: -32603, message: 'stablehlo: unsupported primitive `foo`' }), 'stablehlo: unsupported primitive `foo`');
  assert.equal(describeError({ code: 1, message: 'link failed', data: 'ld: cannot find -lxla' }), 'link failed\nld: cannot find -lxla');
  assert.equal(describeError(new Error('boom')), 'boom');
  assert.equal(describeError('plain'), 'plain');
  assert.equal(describeError({ code: 2 }), '{"code":2}');
});

test('URIs and paths are told apart', () => {
  assert.equal(isUriString('file:///w/model.mlir'), true);
  assert.equal(isUriString('vscode-remote://ssh/x.so'), true);
  assert.equal(isUriString('/w/model.mlir'), false);
  assert.equal(isUriString('C:\\w\\model.so'), false);
  assert.equal(isUriString('C:/w/model.so'), false);
});

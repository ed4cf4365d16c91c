// Checks package.json against what the extension and its users rely on.

import * as assert from 'assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import { test } from 'node:test';

const root = path.join(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

test('identity, engine and entry point', () => {
  assert.equal(pkg.name, 'jaxpr');
  assert.equal(pkg.publisher, 'jaxpr-tools');
  assert.equal(pkg.version, '0.1.0');
  assert.equal(pkg.license, 'Apache-2.0');
  assert.equal(pkg.engines.vscode, '^1.85.0');
  assert.equal(pkg.main, './out/extension.js');
  assert.deepEqual(pkg.activationEvents, ['onLanguage:jaxpr', 'onLanguage:python']);
  assert.match(pkg.dependencies['vscode-languageclient'], /^\^9\./);
  assert.match(pkg.devDependencies['@types/vscode'], /1\.85\./);
});

test('language, grammar and language configuration', () => {
  const [lang] = pkg.contributes.languages;
  assert.equal(lang.id, 'jaxpr');
  assert.deepEqual(lang.extensions, ['.jaxpr', '.jaxpr.txt']);
  const conf = JSON.parse(fs.readFileSync(path.join(root, lang.configuration), 'utf8'));
  assert.equal(conf.comments.lineComment, '#');
  assert.deepEqual(conf.brackets, [['{', '}'], ['[', ']'], ['(', ')']]);
  const word = new RegExp(conf.wordPattern, 'g');
  assert.deepEqual('b:f32[3] = scatter-add[x=1] a -1.5:f32[]'.match(word), ['b', 'f32', '3', 'scatter-add', 'x', '1', 'a', '-1.5', 'f32']);

  const [grammar] = pkg.contributes.grammars;
  assert.equal(grammar.language, 'jaxpr');
  assert.equal(grammar.scopeName, 'source.jaxpr');
  const g = JSON.parse(fs.readFileSync(path.join(root, grammar.path), 'utf8'));
  assert.equal(g.scopeName, 'source.jaxpr');
});

test('settings', () => {
  const props = pkg.contributes.configuration.properties;
  assert.equal(props['jaxpr.server.path'].type, 'string');
  assert.equal(props['jaxpr.server.path'].default, 'jaxpr-lsp');
  assert.deepEqual(props['jaxpr.trace.server'].enum, ['off', 'messages', 'verbose']);
  assert.equal(props['jaxpr.trace.server'].default, 'off');
  assert.equal(props['jaxpr.trace.onSave'].type, 'boolean');
  assert.equal(props['jaxpr.trace.onSave'].default, false);
  assert.equal(props['jaxpr.trace.python'].default, 'python3');
  assert.equal(props['jaxpr.trace.timeout'].default, 120);
  // Settings that choose a program to run are not taken from untrusted workspaces.
  assert.deepEqual(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations, [
    'jaxpr.server.path',
    'jaxpr.trace.python',
    'jaxpr.trace.onSave',
  ]);
});

test('commands as shown in the palette', () => {
  const titles = Object.fromEntries(
    pkg.contributes.commands.map((c: { command: string; title: string; category?: string }) => [
      c.command,
      c.category ? `${c.category}: ${c.title}` : c.title,
    ]),
  );
  assert.deepEqual(titles, {
    'jaxpr.buildStablehlo': 'Jaxpr: Build StableHLO for this file',
    'jaxpr.buildNative': 'Jaxpr: Build native library for this file',
    'jaxpr.restartServer': 'Jaxpr: Restart language server',
    'jaxpr.showGraph': 'Jaxpr: Show dataflow graph',
    'jaxpr.traceAgain': 'Jaxpr: Trace this Python program again',
  });
});

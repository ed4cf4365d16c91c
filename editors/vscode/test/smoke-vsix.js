// Loads the extension from an unpacked .vsix with a stand-in `vscode` module,
// to prove the package carries everything it needs at run time
// (out/extension.js and the production node_modules).
// usage: node test/smoke-vsix.js <unpacked-vsix-dir>/extension
'use strict';
const Module = require('module');
const path = require('path');

const root = path.resolve(process.argv[2]);
const handler = {
  get: (t, p) => (p in t ? t[p] : (t[p] = new Proxy(function () {}, handler))),
  construct: () => new Proxy({}, handler),
  apply: () => new Proxy(function () {}, handler),
};
const fakeVscode = new Proxy({}, handler);
const load = Module._load;
Module._load = function (request, ...rest) {
  return request === 'vscode' ? fakeVscode : load.call(this, request, ...rest);
};

const pkg = require(path.join(root, 'package.json'));
const ext = require(path.join(root, pkg.main));
const lc = require(require.resolve('vscode-languageclient/node', { paths: [path.join(root, 'out')] }));
const grammar = require(path.join(root, pkg.contributes.grammars[0].path));
const problems = [];
if (typeof ext.activate !== 'function' || typeof ext.deactivate !== 'function') problems.push('activate/deactivate missing');
if (typeof lc.LanguageClient !== 'function') problems.push('vscode-languageclient/node not loadable');
if (grammar.scopeName !== 'source.jaxpr') problems.push('grammar missing');
if (!require.resolve('vscode-languageclient/node', { paths: [path.join(root, 'out')] }).startsWith(root)) {
  problems.push('vscode-languageclient resolved outside the package');
}
if (problems.length) {
  console.error(`smoke-vsix: ${problems.join('; ')}`);
  process.exit(1);
}
console.log(`smoke-vsix: ${pkg.publisher}.${pkg.name}@${pkg.version} loads (${pkg.main}, vscode-languageclient, ${pkg.contributes.grammars[0].path})`);

// Runs the extension's activate() against stand-ins for the `vscode` API and
// `vscode-languageclient/node` (VS Code itself cannot be launched here), and
// checks the wiring: how the client is started, which commands exist, and
// what the build commands send and show.

import * as assert from 'assert/strict';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { afterEach, beforeEach, test } from 'node:test';
// eslint-disable-next-line @typescript-eslint/no-require-imports
import Module = require('module');

/* eslint-disable @typescript-eslint/no-explicit-any */

class FakeUri {
  constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static file(p: string): FakeUri {
    return new FakeUri('file', p);
  }
  static parse(s: string): FakeUri {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/[^/]*)?(.*)$/.exec(s);
    return m ? new FakeUri(m[1], m[2]) : new FakeUri('file', s);
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return this.scheme === 'file' ? `file://${this.path}` : `${this.scheme}:${this.path}`;
  }
}

interface Recorded {
  errors: string[];
  infos: string[];
  executed: { command: string; args: any[] }[];
  opened: string[];
  clipboard: string[];
  progressTitles: string[];
  progressMessages: string[];
  progressClosed: string[];
  output: string[];
}

let rec: Recorded;
let config: Record<string, unknown>;
let choices: { error?: string; info?: string };
let commands: Map<string, (...args: any[]) => any>;
let configListeners: ((e: { affectsConfiguration(s: string): boolean }) => void)[];
let trusted: boolean;
let trustListeners: (() => void)[];
let channelDisposed: boolean;
let activeEditor: any;
let textDocuments: any[];

const fakeVscode = {
  Uri: FakeUri,
  ProgressLocation: { Notification: 15 },
  window: {
    createOutputChannel: (_name: string) => ({
      appendLine: (l: string) => {
        // VS Code's channel throws once disposed ("Channel has been closed").
        if (channelDisposed) {
          throw new Error('Channel has been closed');
        }
        rec.output.push(l);
      },
      show: () => undefined,
      dispose: () => {
        channelDisposed = true;
      },
    }),
    showErrorMessage: async (m: string, ..._items: string[]) => {
      rec.errors.push(m);
      return choices.error;
    },
    showInformationMessage: async (m: string, ...items: string[]) => {
      rec.infos.push(`${m} [${items.join('|')}]`);
      return choices.info;
    },
    withProgress: async (opts: { title: string }, task: (progress: any, token: any) => Promise<unknown>) => {
      rec.progressTitles.push(opts.title);
      const progress = { report: (p: { message?: string }) => rec.progressMessages.push(p.message ?? '') };
      const token = { onCancellationRequested: () => ({ dispose: () => undefined }) };
      const done = task(progress, token);
      done.then(
        () => rec.progressClosed.push(opts.title),
        () => undefined,
      );
      return done;
    },
    showTextDocument: async (doc: any) => {
      rec.opened.push(doc.uri.toString());
    },
    get activeTextEditor() {
      return activeEditor;
    },
  },
  workspace: {
    getConfiguration: (section: string) => ({
      get: (key: string, fallback?: unknown) => config[`${section}.${key}`] ?? fallback,
    }),
    workspaceFolders: undefined,
    get isTrusted() {
      return trusted;
    },
    onDidGrantWorkspaceTrust: (l: () => void) => {
      trustListeners.push(l);
      return { dispose: () => undefined };
    },
    get textDocuments() {
      return textDocuments;
    },
    onDidChangeConfiguration: (l: any) => {
      configListeners.push(l);
      return { dispose: () => undefined };
    },
    openTextDocument: async (uri: FakeUri) => ({ uri }),
  },
  // No Python extension installed.
  extensions: {
    getExtension: (_id: string) => undefined,
  },
  commands: {
    registerCommand: (id: string, fn: (...args: any[]) => any) => {
      assert.ok(!commands.has(id), `command ${id} registered twice`);
      commands.set(id, fn);
      return { dispose: () => commands.delete(id) };
    },
    executeCommand: async (command: string, ...args: any[]) => {
      rec.executed.push({ command, args });
    },
  },
  env: {
    clipboard: { writeText: async (t: string) => void rec.clipboard.push(t) },
  },
};

class FakeLanguageClient {
  static instances: FakeLanguageClient[] = [];
  static failStart: Error | undefined;
  static answer: (params: any) => Promise<unknown> = async () => ({ path: '/tmp/out.mlir' });
  requests: { type: any; params: any }[] = [];
  running = false;
  disposed = false;
  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: any,
    readonly clientOptions: any,
  ) {
    FakeLanguageClient.instances.push(this);
  }
  async start(): Promise<void> {
    if (FakeLanguageClient.failStart) {
      throw FakeLanguageClient.failStart;
    }
    this.running = true;
  }
  isRunning(): boolean {
    return this.running;
  }
  async dispose(): Promise<void> {
    this.running = false;
    this.disposed = true;
  }
  async sendRequest(type: any, params: any): Promise<unknown> {
    this.requests.push({ type, params });
    return FakeLanguageClient.answer(params);
  }
}

const EXECUTE_COMMAND_TYPE = { method: 'workspace/executeCommand' };
const fakeLanguageClient = {
  LanguageClient: FakeLanguageClient,
  TransportKind: { stdio: 0, ipc: 1 },
  ExecuteCommandRequest: { type: EXECUTE_COMMAND_TYPE, method: 'workspace/executeCommand' },
};

const originalLoad = (Module as any)._load;
(Module as any)._load = function (request: string, ...rest: any[]) {
  if (request === 'vscode') {
    return fakeVscode;
  }
  if (request === 'vscode-languageclient/node') {
    return fakeLanguageClient;
  }
  return originalLoad.call(this, request, ...rest);
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const extension: typeof import('../extension') = require('../extension');

const packageJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));

let serverBinary: string;
let subscriptions: { dispose(): any }[];

function jaxprDoc(p: string, extra: Record<string, unknown> = {}) {
  return { uri: FakeUri.file(p), languageId: 'jaxpr', isDirty: false, isUntitled: false, save: async () => true, ...extra };
}

async function activate(): Promise<void> {
  subscriptions = [];
  await extension.activate({ subscriptions } as any);
}

beforeEach(() => {
  rec = {
    errors: [],
    infos: [],
    executed: [],
    opened: [],
    clipboard: [],
    progressTitles: [],
    progressMessages: [],
    progressClosed: [],
    output: [],
  };
  trusted = true;
  trustListeners = [];
  channelDisposed = false;
  choices = {};
  commands = new Map();
  configListeners = [];
  textDocuments = [];
  activeEditor = undefined;
  FakeLanguageClient.instances = [];
  FakeLanguageClient.failStart = undefined;
  FakeLanguageClient.answer = async () => ({ path: '/tmp/out.mlir' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jaxpr-vscode-ext-'));
  serverBinary = path.join(dir, 'jaxpr-lsp');
  fs.writeFileSync(serverBinary, '#!/bin/sh\n');
  fs.chmodSync(serverBinary, 0o755);
  config = { 'jaxpr.server.path': serverBinary };
});

afterEach(async () => {
  await extension.deactivate();
  for (const s of subscriptions ?? []) {
    s.dispose();
  }
});

test('activation starts jaxpr-lsp over stdio for jaxpr documents', async () => {
  await activate();
  assert.equal(FakeLanguageClient.instances.length, 1);
  const c = FakeLanguageClient.instances[0];
  assert.equal(c.id, 'jaxpr', 'the id makes the client read jaxpr.trace.server');
  assert.deepEqual(c.serverOptions.run, { command: serverBinary, transport: fakeLanguageClient.TransportKind.stdio });
  assert.deepEqual(c.clientOptions.documentSelector, [
    { scheme: 'file', language: 'jaxpr' },
    { scheme: 'untitled', language: 'jaxpr' },
    { scheme: 'file', language: 'python' },
  ]);
  assert.deepEqual(c.clientOptions.initializationOptions, {
    trace: { onSave: false, python: 'python3', timeout: 120 },
    costHints: 'lens',
  });
  assert.deepEqual(c.clientOptions.synchronize, { configurationSection: 'jaxpr' });
  assert.ok(c.clientOptions.outputChannel, 'an output channel is passed to the client');
  assert.equal(c.isRunning(), true);
  assert.deepEqual(rec.errors, []);
});

test('the registered commands are exactly the contributed ones, and differ from the server command', async () => {
  await activate();
  const contributed = packageJson.contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual([...commands.keys()].sort(), contributed);
  assert.deepEqual(contributed, ['jaxpr.buildNative', 'jaxpr.buildStablehlo', 'jaxpr.restartServer', 'jaxpr.showGraph', 'jaxpr.traceAgain']);
  assert.ok(!commands.has('jaxpr.server.build'));
  assert.ok(!commands.has('jaxpr.server.graph'));
  assert.ok(!commands.has('jaxpr.server.traceAgain'));
});

test('Build StableHLO sends jaxpr.server.build for the active document and offers to open the result', async () => {
  await activate();
  activeEditor = { document: jaxprDoc('/w/model.jaxpr') };
  textDocuments = [activeEditor.document];
  FakeLanguageClient.answer = async () => ({ path: '/w/model.mlir' });
  choices.info = 'Open';
  await commands.get('jaxpr.buildStablehlo')!();

  const c = FakeLanguageClient.instances[0];
  assert.equal(c.requests.length, 1);
  assert.equal(c.requests[0].type, EXECUTE_COMMAND_TYPE);
  assert.deepEqual(c.requests[0].params, {
    command: 'jaxpr.server.build',
    arguments: [{ uri: 'file:///w/model.jaxpr', emit: 'stablehlo' }],
  });
  assert.deepEqual(rec.errors, []);
  assert.equal(rec.infos.length, 1);
  assert.match(rec.infos[0], /StableHLO/);
  assert.match(rec.infos[0], /\/w\/model\.mlir/);
  assert.match(rec.infos[0], /\[Open\|/);
  assert.deepEqual(rec.opened, ['file:///w/model.mlir']);
});

test('Build native library sends emit=native and reveals the library', async () => {
  await activate();
  activeEditor = { document: jaxprDoc('/w/model.jaxpr') };
  FakeLanguageClient.answer = async () => ({ path: '/w/libmodel.so' });
  choices.info = 'Open';
  await commands.get('jaxpr.buildNative')!();
  const c = FakeLanguageClient.instances[0];
  assert.deepEqual(c.requests[0].params.arguments, [{ uri: 'file:///w/model.jaxpr', emit: 'native' }]);
  assert.match(rec.infos[0], /native library/);
  assert.equal(rec.executed.length, 1);
  assert.equal(rec.executed[0].command, 'revealFileInOS');
  assert.equal(rec.executed[0].args[0].toString(), 'file:///w/libmodel.so');
});

test('a URI argument (explorer context menu) wins over the active editor', async () => {
  await activate();
  activeEditor = { document: jaxprDoc('/w/other.jaxpr') };
  await commands.get('jaxpr.buildStablehlo')!(FakeUri.file('/w/picked.jaxpr'));
  const c = FakeLanguageClient.instances[0];
  assert.equal(c.requests[0].params.arguments[0].uri, 'file:///w/picked.jaxpr');
});

test('a JSON-RPC error from the server is shown as an error message', async () => {
  await activate();
  activeEditor = { document: jaxprDoc('/w/model.jaxpr') };
  FakeLanguageClient.answer = async () => {
    throw Object.assign(new Error('unsupported primitive `foo` at 3:5'), { code: -32603 });
  };
  await commands.get('jaxpr.buildStablehlo')!();
  assert.deepEqual(rec.infos, []);
  assert.equal(rec.errors.length, 1);
  assert.match(rec.errors[0], /building StableHLO for model\.jaxpr failed: unsupported primitive `foo` at 3:5/);
});

test('an answer without a path is an error', async () => {
  await activate();
  activeEditor = { document: jaxprDoc('/w/model.jaxpr') };
  FakeLanguageClient.answer = async () => null;
  await commands.get('jaxpr.buildNative')!();
  assert.equal(rec.errors.length, 1);
  assert.match(rec.errors[0], /without an output path/);
});

test('dirty documents are saved before building; other languages are refused', async () => {
  await activate();
  let saved = 0;
  const doc = jaxprDoc('/w/model.jaxpr', { isDirty: true, save: async () => ++saved > 0 });
  activeEditor = { document: doc };
  textDocuments = [doc];
  await commands.get('jaxpr.buildStablehlo')!();
  assert.equal(saved, 1);

  const py = { ...jaxprDoc('/w/model.py'), languageId: 'python' };
  activeEditor = { document: py };
  textDocuments = [py];
  await commands.get('jaxpr.buildStablehlo')!();
  assert.match(rec.errors.at(-1)!, /model\.py is not a jaxpr file/);
  assert.equal(FakeLanguageClient.instances[0].requests.length, 1);
});

test('building without an editor says so', async () => {
  await activate();
  await commands.get('jaxpr.buildStablehlo')!();
  assert.match(rec.errors[0], /open a jaxpr file/);
});

test('a missing server binary gives a clear error naming the setting, and builds are refused', async () => {
  config['jaxpr.server.path'] = '/nonexistent/bin/jaxpr-lsp';
  await activate();
  assert.equal(FakeLanguageClient.instances.length, 0);
  assert.equal(rec.errors.length, 1);
  assert.match(rec.errors[0], /"\/nonexistent\/bin\/jaxpr-lsp" does not exist/);
  assert.match(rec.errors[0], /jaxpr\.server\.path/);

  activeEditor = { document: jaxprDoc('/w/model.jaxpr') };
  await commands.get('jaxpr.buildStablehlo')!();
  assert.equal(rec.errors.length, 2);
  assert.match(rec.errors[1], /language server is not running/);
});

test('a server that fails to start is reported with the setting name', async () => {
  FakeLanguageClient.failStart = new Error('Launching server using command jaxpr-lsp failed.');
  await activate();
  assert.equal(FakeLanguageClient.instances.length, 1);
  assert.equal(FakeLanguageClient.instances[0].disposed, true);
  assert.match(rec.errors[0], /could not be started: Launching server using command jaxpr-lsp failed\./);
  assert.match(rec.errors[0], /jaxpr\.server\.path/);
});

test('restart re-reads the setting; pointing jaxpr.server.path at another binary restarts too', async () => {
  config['jaxpr.server.path'] = '/nonexistent/jaxpr-lsp';
  await activate();
  assert.equal(FakeLanguageClient.instances.length, 0);

  config['jaxpr.server.path'] = serverBinary;
  await commands.get('jaxpr.restartServer')!();
  assert.equal(FakeLanguageClient.instances.length, 1);
  assert.equal(FakeLanguageClient.instances[0].isRunning(), true);

  await commands.get('jaxpr.restartServer')!();
  assert.equal(FakeLanguageClient.instances.length, 2);
  assert.equal(FakeLanguageClient.instances[0].disposed, true);

  // A change that leaves the same binary keeps the running server.
  for (const l of configListeners) {
    l({ affectsConfiguration: (s: string) => s === 'jaxpr.server.path' });
  }
  const other = path.join(path.dirname(serverBinary), 'jaxpr-lsp-other');
  fs.copyFileSync(serverBinary, other);
  fs.chmodSync(other, 0o755);
  config['jaxpr.server.path'] = other;
  for (const l of configListeners) {
    l({ affectsConfiguration: (s: string) => s === 'jaxpr.server.path' });
  }
  // the restart is queued behind the lifecycle lock; a build waits for it
  activeEditor = { document: jaxprDoc('/w/model.jaxpr') };
  await commands.get('jaxpr.buildStablehlo')!();
  assert.equal(FakeLanguageClient.instances.length, 3);
  assert.equal(FakeLanguageClient.instances[2].requests.length, 1);
});

test('Trace again sends jaxpr.server.traceAgain for the active Python file, saved first, and reports the answer', async () => {
  config['jaxpr.trace.onSave'] = true;
  config['jaxpr.trace.timeout'] = 30;
  config['jaxpr.costHints'] = 'inlay';
  await activate();
  assert.deepEqual(FakeLanguageClient.instances[0].clientOptions.initializationOptions, {
    trace: { onSave: true, python: 'python3', timeout: 30 },
    costHints: 'inlay',
  });
  let saved = 0;
  const py = { ...jaxprDoc('/w/train.py'), languageId: 'python', isDirty: true, save: async () => ++saved > 0 };
  activeEditor = { document: py };
  textDocuments = [py];
  FakeLanguageClient.answer = async () => ({ session: '/w/.jaxpr-session', status: 'ok', message: null, functions: 3, errors: 1 });
  await commands.get('jaxpr.traceAgain')!();
  const c = FakeLanguageClient.instances[0];
  assert.equal(saved, 1);
  assert.deepEqual(c.requests[0].params, { command: 'jaxpr.server.traceAgain', arguments: [{ uri: 'file:///w/train.py' }] });
  assert.match(rec.infos[0], /traced train\.py: 3 functions traced, 1 error \(\/w\/\.jaxpr-session\)/);

  FakeLanguageClient.answer = async () => ({ status: 'timeout', message: 'the program was still running after 30 s', functions: 0, errors: 0 });
  await commands.get('jaxpr.traceAgain')!();
  assert.match(rec.errors.at(-1)!, /tracing train\.py failed: the program was still running after 30 s \(0 functions traced, 0 errors\)/);

  // Not a Python file: refused without a request.
  activeEditor = { document: jaxprDoc('/w/model.jaxpr') };
  textDocuments = [activeEditor.document];
  await commands.get('jaxpr.traceAgain')!();
  assert.match(rec.errors.at(-1)!, /open a Python file/);
  assert.equal(c.requests.length, 2);
});

test('in Restricted Mode the notice says the folder setting is ignored, and closes once the folder is trusted', async () => {
  // VS Code hides the folder's value of the restricted setting: the default applies.
  config['jaxpr.server.path'] = undefined;
  trusted = false;
  const savedPath = process.env.PATH;
  process.env.PATH = path.dirname(serverBinary) + '-not-there';
  try {
    await activate();
  } finally {
    process.env.PATH = savedPath;
  }
  assert.equal(FakeLanguageClient.instances.length, 0);
  assert.deepEqual(rec.errors, [], 'no error toast that would outlive the trust');
  assert.equal(rec.progressMessages.length, 1);
  assert.match(rec.progressMessages[0], /Restricted Mode: this folder's "jaxpr\.server\.path" is not used until you trust the folder/);
  assert.match(rec.progressMessages[0], /"jaxpr-lsp" was not found on PATH/);
  assert.deepEqual(rec.progressClosed, []);

  // Trusting makes the folder's value visible; the server starts and the notice goes.
  trusted = true;
  config['jaxpr.server.path'] = serverBinary;
  for (const l of trustListeners) {
    l();
  }
  for (const l of configListeners) {
    l({ affectsConfiguration: (s: string) => s === 'jaxpr.server.path' });
  }
  activeEditor = { document: jaxprDoc('/w/model.jaxpr') };
  await commands.get('jaxpr.buildStablehlo')!();
  assert.equal(FakeLanguageClient.instances.length, 1, 'one start for the trust and the configuration change together');
  assert.equal(FakeLanguageClient.instances[0].isRunning(), true);
  assert.equal(rec.progressClosed[0], 'Jaxpr');
  assert.deepEqual(rec.errors, []);
});

test('deactivate stops the client before it closes the output channel, and a failing stop is logged', async () => {
  await activate();
  const c = FakeLanguageClient.instances[0];
  let channelOpenAtStop: boolean | undefined;
  c.dispose = async () => {
    channelOpenAtStop = !channelDisposed;
    throw new Error('stop failed');
  };
  // VS Code disposes the subscriptions without waiting for deactivate().
  const done = extension.deactivate();
  for (const s of subscriptions) {
    s.dispose();
  }
  await done;
  assert.equal(channelOpenAtStop, true);
  assert.equal(channelDisposed, true);
  assert.match(rec.output.at(-1)!, /Stopping the language server failed: stop failed/);
});

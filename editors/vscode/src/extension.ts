// VS Code client for jaxpr-lsp: starts the server over stdio (for jaxpr
// files, and Python files for their tracing sessions) and adds the build
// commands (which ask the server to compile the current file) and the
// trace command (which asks it to run the Python program's trace again),
// and *Show dataflow graph* (the server draws the file's graph as a page,
// shown in a webview beside the text, its selection tied to the editor's).

import * as path from 'path';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from 'vscode-languageclient/node';
import { EMIT_LABEL, Emit, buildParams, describeError, isUriString, parseBuildResult } from './build';
import { graphParams, makeNonce, parseGraphResult, revealMessage, selectedSpan } from './graph';
import { quietWhenStopped } from './requests';
import { SERVER_PATH_SETTING, missingServerMessage, resolveServerCommand, restrictedModeMessage } from './serverPath';
import { parseTraceResult, traceParams, traceSettings } from './trace';

const CLIENT_ID = 'jaxpr';
const CLIENT_NAME = 'Jaxpr Language Server';

let client: LanguageClient | undefined;
/** The binary the running client was started from. */
let clientCommand: string | undefined;
let outputChannel: vscode.OutputChannel | undefined;
/** Closes the Restricted Mode notice, once the server starts or the folder is trusted. */
let closeRestrictedNotice: (() => void) | undefined;
/** Serialises start/stop/restart so that two quick restarts do not race. */
let lifecycle: Promise<unknown> = Promise.resolve();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  // The channel is not among context.subscriptions: VS Code disposes those
  // right after calling deactivate() without waiting for it, while the
  // client's shutdown still writes its trace there. deactivate() disposes it.
  outputChannel = vscode.window.createOutputChannel(CLIENT_NAME);
  context.subscriptions.push(
    vscode.commands.registerCommand('jaxpr.restartServer', () => restartServer()),
    vscode.commands.registerCommand('jaxpr.traceAgain', (resource?: unknown) => traceCommand(resource)),
    vscode.commands.registerCommand('jaxpr.buildStablehlo', (resource?: unknown) => buildCommand('stablehlo', resource)),
    vscode.commands.registerCommand('jaxpr.buildNative', (resource?: unknown) => buildCommand('native', resource)),
    vscode.commands.registerCommand('jaxpr.showGraph', () => showGraphCommand()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(SERVER_PATH_SETTING)) {
        void ensureServer();
      }
    }),
    // Trusting the folder makes its `jaxpr.server.path` count.
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      closeRestrictedNotice?.();
      void ensureServer();
    }),
  );
  await startServer();
}

export async function deactivate(): Promise<void> {
  closeRestrictedNotice?.();
  await serialised(stopClient);
  const channel = outputChannel;
  outputChannel = undefined;
  channel?.dispose();
}

function serialised<T>(task: () => Promise<T>): Promise<T> {
  const next = lifecycle.then(task, task);
  lifecycle = next.catch(() => undefined);
  return next;
}

function log(message: string): void {
  try {
    outputChannel?.appendLine(`[${new Date().toISOString()}] ${message}`);
  } catch {
    // A closed channel (the window is going away): nowhere left to log to.
  }
}

function startServer(): Promise<boolean> {
  return serialised(startClient);
}

async function restartServer(): Promise<boolean> {
  return serialised(async () => {
    await stopClient();
    return startClient();
  });
}

/** Starts the server, or restarts it when the setting now names another binary. */
async function ensureServer(): Promise<boolean> {
  return serialised(async () => {
    const resolved = await resolveConfiguredServer();
    if (client?.isRunning() && resolved.ok && resolved.command === clientCommand) {
      return true;
    }
    await stopClient();
    return startClient();
  });
}

async function resolveConfiguredServer(): Promise<ReturnType<typeof resolveServerCommand>> {
  // In Restricted Mode VS Code hides the workspace's value of this setting.
  const configured = vscode.workspace.getConfiguration('jaxpr').get<string>('server.path');
  const workspaceFolder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const pythonInterpreter = await selectedPythonInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri);
  return resolveServerCommand(configured, { workspaceFolder, pythonInterpreter });
}

async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
  clientCommand = undefined;
  if (c) {
    try {
      await c.dispose(2000);
    } catch (err) {
      log(`Stopping the language server failed: ${describeError(err)}`);
    }
  }
}

/**
 * The interpreter selected in the Python extension (`ms-python.python`), when
 * it is installed: `pip install jaxpr` puts the server beside it.
 */
async function selectedPythonInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const python = vscode.extensions.getExtension('ms-python.python');
  if (!python) {
    return undefined;
  }
  try {
    const api = python.isActive ? python.exports : await python.activate();
    const env = api?.environments?.getActiveEnvironmentPath?.(resource);
    return typeof env?.path === 'string' ? env.path : undefined;
  } catch (err) {
    log(`The Python extension did not say which interpreter is selected: ${describeError(err)}`);
    return undefined;
  }
}

async function startClient(): Promise<boolean> {
  const resolved = await resolveConfiguredServer();
  if (!resolved.ok) {
    if (!vscode.workspace.isTrusted) {
      const message = restrictedModeMessage(resolved.reason);
      log(message);
      showRestrictedNotice(message);
      return false;
    }
    const message = missingServerMessage(resolved.reason);
    log(message);
    void showMissingServer(message);
    return false;
  }

  log(`Starting ${resolved.command}`);
  const serverOptions: ServerOptions = {
    run: { command: resolved.command, transport: TransportKind.stdio },
    debug: { command: resolved.command, transport: TransportKind.stdio },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'jaxpr' },
      { scheme: 'untitled', language: 'jaxpr' },
      // Python files on disk: hovers, diagnostics and definitions from their tracing session.
      { scheme: 'file', language: 'python' },
    ],
    initializationOptions: {
      trace: traceSettings((key) => vscode.workspace.getConfiguration('jaxpr').get(key)),
      costHints: vscode.workspace.getConfiguration('jaxpr').get<string>('costHints', 'lens'),
    },
    // Later changes of `jaxpr.*` reach the server as workspace/didChangeConfiguration.
    synchronize: { configurationSection: 'jaxpr' },
    outputChannel,
    middleware: quietWhenStopped(() => client === c && c.isRunning()),
  };
  // The id 'jaxpr' makes the client honour the `jaxpr.trace.server` setting.
  const c = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  client = c;
  clientCommand = resolved.command;
  try {
    await c.start();
    closeRestrictedNotice?.();
    return true;
  } catch (err) {
    const message =
      `Jaxpr: the language server "${resolved.command}" could not be started: ${describeError(err)}. ` +
      `Check the "${SERVER_PATH_SETTING}" setting.`;
    log(message);
    if (client === c) {
      client = undefined;
      clientCommand = undefined;
    }
    try {
      await c.dispose(2000);
    } catch {
      // already stopped
    }
    void showMissingServer(message);
    return false;
  }
}

/**
 * Shows why the server did not start in Restricted Mode as a notification
 * that closes itself when the folder is trusted or the server starts: an
 * error message cannot be taken back, and would stay on screen after the
 * server came up.
 */
function showRestrictedNotice(message: string): void {
  if (closeRestrictedNotice) {
    return;
  }
  void vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Jaxpr', cancellable: true },
    (progress, token) =>
      new Promise<void>((resolve) => {
        progress.report({ message });
        const close = () => {
          if (closeRestrictedNotice === close) {
            closeRestrictedNotice = undefined;
          }
          resolve();
        };
        closeRestrictedNotice = close;
        token.onCancellationRequested(close);
      }),
  );
}

async function showMissingServer(message: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, 'Open Settings', 'Show Output');
  if (choice === 'Open Settings') {
    await vscode.commands.executeCommand('workbench.action.openSettings', SERVER_PATH_SETTING);
  } else if (choice === 'Show Output') {
    outputChannel?.show(true);
  }
}

/** The document to build: an explorer/context-menu URI argument, or the active editor's document. */
function targetUri(resource: unknown): vscode.Uri | undefined {
  if (resource instanceof vscode.Uri) {
    return resource;
  }
  return vscode.window.activeTextEditor?.document.uri;
}

async function buildCommand(emit: Emit, resource?: unknown): Promise<void> {
  const label = EMIT_LABEL[emit];
  const uri = targetUri(resource);
  if (!uri) {
    void vscode.window.showErrorMessage(`Jaxpr: open a jaxpr file to build ${label} for it.`);
    return;
  }
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (doc && doc.languageId !== 'jaxpr') {
    void vscode.window.showErrorMessage(`Jaxpr: ${displayName(uri)} is not a jaxpr file.`);
    return;
  }
  // The server may read the file from disk: build what the user sees.
  if (doc && doc.isDirty && !doc.isUntitled) {
    await doc.save();
  }

  await lifecycle;
  const c = client;
  if (!c || !c.isRunning()) {
    const choice = await vscode.window.showErrorMessage(
      `Jaxpr: the language server is not running, so ${label} cannot be built. Check "${SERVER_PATH_SETTING}".`,
      'Restart Server',
      'Show Output',
    );
    if (choice === 'Restart Server') {
      await restartServer();
    } else if (choice === 'Show Output') {
      outputChannel?.show(true);
    }
    return;
  }

  let result: unknown;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Jaxpr: building ${label} for ${displayName(uri)}…` },
      () => c.sendRequest(ExecuteCommandRequest.type, buildParams(uri.toString(), emit)),
    );
  } catch (err) {
    const message = `Jaxpr: building ${label} for ${displayName(uri)} failed: ${describeError(err)}`;
    log(message);
    const choice = await vscode.window.showErrorMessage(message, 'Show Output');
    if (choice === 'Show Output') {
      outputChannel?.show(true);
    }
    return;
  }

  const outcome = parseBuildResult(result);
  if (!outcome.ok) {
    const message = `Jaxpr: building ${label} for ${displayName(uri)} failed: ${outcome.message}`;
    log(message);
    void vscode.window.showErrorMessage(message);
    return;
  }
  log(`Built ${label} for ${uri.toString()}: ${outcome.path}`);
  const output = outputUri(outcome.path, uri);
  const choice = await vscode.window.showInformationMessage(`Jaxpr: built ${label}: ${outcome.path}`, 'Open', 'Copy Path');
  if (choice === 'Open') {
    await openOutput(output, emit);
  } else if (choice === 'Copy Path') {
    await vscode.env.clipboard.writeText(outcome.path);
  }
}

async function traceCommand(resource?: unknown): Promise<void> {
  const uri = targetUri(resource);
  const doc = uri && vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (!uri || uri.scheme !== 'file' || (doc && doc.languageId !== 'python')) {
    void vscode.window.showErrorMessage('Jaxpr: open a Python file (saved on disk) to trace it.');
    return;
  }
  // The program runs from disk: trace what the user sees.
  if (doc && doc.isDirty) {
    await doc.save();
  }
  await lifecycle;
  const c = client;
  if (!c || !c.isRunning()) {
    void vscode.window.showErrorMessage(
      `Jaxpr: the language server is not running, so ${displayName(uri)} cannot be traced. Check "${SERVER_PATH_SETTING}".`,
    );
    return;
  }
  let result: unknown;
  try {
    // The server reports progress itself ($/progress), with the time limit.
    result = await c.sendRequest(ExecuteCommandRequest.type, traceParams(uri.toString()));
  } catch (err) {
    const message = `Jaxpr: tracing ${displayName(uri)} failed: ${describeError(err)}`;
    log(message);
    void vscode.window.showErrorMessage(message);
    return;
  }
  const outcome = parseTraceResult(result);
  log(`Traced ${uri.toString()}: ${outcome.message}`);
  if (outcome.ok) {
    void vscode.window.showInformationMessage(`Jaxpr: traced ${displayName(uri)}: ${outcome.message}`);
  } else {
    void vscode.window.showErrorMessage(`Jaxpr: tracing ${displayName(uri)} failed: ${outcome.message}`);
  }
}

/** The server's output path as a URI; a relative path is taken relative to the built file. */
function outputUri(p: string, source: vscode.Uri): vscode.Uri {
  if (isUriString(p)) {
    return vscode.Uri.parse(p);
  }
  if (path.isAbsolute(p) || source.scheme !== 'file') {
    return vscode.Uri.file(p);
  }
  return vscode.Uri.file(path.join(path.dirname(source.fsPath), p));
}

async function openOutput(output: vscode.Uri, emit: Emit): Promise<void> {
  try {
    if (emit === 'native') {
      // A shared library is binary: show it in the OS file manager.
      await vscode.commands.executeCommand('revealFileInOS', output);
    } else {
      const doc = await vscode.workspace.openTextDocument(output);
      await vscode.window.showTextDocument(doc, { preview: false });
    }
  } catch (err) {
    void vscode.window.showErrorMessage(`Jaxpr: cannot open ${output.fsPath}: ${describeError(err)}`);
  }
}

function displayName(uri: vscode.Uri): string {
  return path.basename(uri.path) || uri.toString();
}

/** The open graph panels, by document URI: one per document. */
const graphPanels = new Map<string, vscode.WebviewPanel>();

/**
 * *Show dataflow graph*: asks the server for the page of the active jaxpr
 * document's graph and shows it beside the text. A click on a node selects
 * its text in the editor; moving the cursor in the editor selects the
 * innermost equation under it in the graph.
 */
async function showGraphCommand(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== 'jaxpr') {
    void vscode.window.showErrorMessage('Jaxpr: open a jaxpr file to show its dataflow graph.');
    return;
  }
  const c = client;
  if (!c || !c.isRunning()) {
    void vscode.window.showErrorMessage(`Jaxpr: the language server is not running, so the graph cannot be drawn. Check "${SERVER_PATH_SETTING}".`);
    return;
  }
  const document = editor.document;
  const key = document.uri.toString();
  const nonce = makeNonce();
  let result: unknown;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `Jaxpr: drawing the graph of ${displayName(document.uri)}` },
      () => c.sendRequest(ExecuteCommandRequest.type, graphParams(key, nonce)),
    );
  } catch (err) {
    void vscode.window.showErrorMessage(`Jaxpr: drawing the graph of ${displayName(document.uri)} failed: ${describeError(err)}`);
    return;
  }
  const outcome = parseGraphResult(result);
  if (!outcome.ok) {
    void vscode.window.showErrorMessage(`Jaxpr: ${outcome.message}`);
    return;
  }
  let panel = graphPanels.get(key);
  if (panel) {
    panel.reveal(vscode.ViewColumn.Beside, true);
  } else {
    panel = vscode.window.createWebviewPanel(
      'jaxpr.graph',
      `Graph: ${displayName(document.uri)}`,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [] },
    );
    const created = panel;
    graphPanels.set(key, created);
    const subscriptions: vscode.Disposable[] = [];
    created.webview.onDidReceiveMessage(
      (message: unknown) => {
        const span = selectedSpan(message);
        if (!span) {
          return;
        }
        const target = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === key);
        if (!target) {
          return;
        }
        const range = new vscode.Range(span.startLine, span.startCharacter, span.endLine, span.endCharacter);
        target.selection = new vscode.Selection(range.start, range.end);
        target.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      },
      undefined,
      subscriptions,
    );
    vscode.window.onDidChangeTextEditorSelection(
      (e) => {
        // Selections the graph made come back here too; the page ignores a
        // reveal of the node it already has selected.
        if (e.textEditor.document.uri.toString() === key) {
          const at = e.selections[0].active;
          void created.webview.postMessage(revealMessage(at.line, at.character));
        }
      },
      undefined,
      subscriptions,
    );
    created.onDidDispose(() => {
      graphPanels.delete(key);
      subscriptions.forEach((d) => d.dispose());
    });
  }
  panel.webview.html = outcome.html;
}

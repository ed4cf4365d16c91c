// Finding the language server binary named by `jaxpr.server.path`.
// Kept free of the `vscode` module so it can be unit-tested with plain Node.

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

export const SERVER_PATH_SETTING = 'jaxpr.server.path';
export const DEFAULT_SERVER_PATH = 'jaxpr-lsp';

export interface ResolveOptions {
  /** First workspace folder, for `${workspaceFolder}` and relative paths. */
  workspaceFolder?: string;
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  homeDir?: string;
  /**
   * The interpreter of the Python environment selected in the Python
   * extension, if any: `pip install jaxpr` puts `jaxpr-lsp` beside it, where
   * a bare name is looked for before PATH.
   */
  pythonInterpreter?: string;
}

export type Resolution =
  | { ok: true; command: string }
  | { ok: false; reason: string };

/** Expands `~`, `${userHome}`, `${workspaceFolder}` and `${env:NAME}` in a configured path. */
export function expandServerPath(raw: string, opts: ResolveOptions = {}): string {
  const home = opts.homeDir ?? os.homedir();
  const env = opts.env ?? process.env;
  let p = raw.trim();
  if (p === '~') {
    p = home;
  } else if (p.startsWith('~/') || p.startsWith('~\\')) {
    p = path.join(home, p.slice(2));
  }
  p = p.replace(/\$\{userHome\}/g, home);
  p = p.replace(/\$\{env:([^}]+)\}/g, (_m, name: string) => env[name] ?? '');
  if (opts.workspaceFolder !== undefined) {
    p = p.replace(/\$\{workspaceFolder\}/g, opts.workspaceFolder);
  }
  return p;
}

function isExecutableFile(p: string, platform: NodeJS.Platform): boolean {
  try {
    if (!fs.statSync(p).isFile()) {
      return false;
    }
    if (platform !== 'win32') {
      fs.accessSync(p, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

function hasPathSeparator(p: string, platform: NodeJS.Platform): boolean {
  return p.includes('/') || (platform === 'win32' && p.includes('\\'));
}

/**
 * Turns the configured server path into a command to spawn, or says why it
 * cannot be used. A bare name (`jaxpr-lsp`) is looked up on PATH (with
 * PATHEXT on Windows); anything with a path separator is taken as a file,
 * relative to the workspace folder when it is relative.
 */
export function resolveServerCommand(raw: string | undefined, opts: ResolveOptions = {}): Resolution {
  const platform = opts.platform ?? process.platform;
  const env = opts.env ?? process.env;
  const configured = (raw ?? '').trim() === '' ? DEFAULT_SERVER_PATH : (raw as string);
  const expanded = expandServerPath(configured, opts);
  if (expanded.includes('${workspaceFolder}')) {
    return { ok: false, reason: `"${configured}" refers to \${workspaceFolder}, but no folder is open` };
  }

  if (path.isAbsolute(expanded) || hasPathSeparator(expanded, platform)) {
    const full = path.resolve(opts.workspaceFolder ?? process.cwd(), expanded);
    if (!fs.existsSync(full)) {
      return { ok: false, reason: `"${full}" does not exist` };
    }
    if (!isExecutableFile(full, platform)) {
      return { ok: false, reason: `"${full}" is not an executable file` };
    }
    return { ok: true, command: full };
  }

  const exts =
    platform === 'win32'
      ? ['', ...(env.PATHEXT ?? '.COM;.EXE;.BAT;.CMD').split(';').filter((e) => e !== '')]
      : [''];
  const findIn = (dirs: string[]): string | undefined => {
    for (const dir of dirs) {
      for (const ext of exts) {
        const candidate = path.join(dir, expanded + ext);
        if (isExecutableFile(candidate, platform)) {
          return candidate;
        }
      }
    }
    return undefined;
  };
  const looked: string[] = [];
  if (opts.pythonInterpreter) {
    // The interpreter's own folder (`bin/` of a venv, the prefix of a conda
    // environment on Windows) and, on Windows, its `Scripts/`.
    const envDir = path.dirname(opts.pythonInterpreter);
    const envDirs = platform === 'win32' ? [envDir, path.join(envDir, 'Scripts')] : [envDir];
    const found = findIn(envDirs);
    if (found) {
      return { ok: true, command: found };
    }
    looked.push(`the selected Python environment (${envDirs.join(', ')})`);
  }
  const pathVar = env.PATH ?? env.Path ?? '';
  const dirs = pathVar.split(platform === 'win32' ? ';' : path.delimiter).filter((d) => d !== '');
  const found = findIn(dirs);
  if (found) {
    return { ok: true, command: found };
  }
  const onPath = `on PATH (${dirs.join(path.delimiter) || 'empty'})`;
  const where = looked.length > 0 ? `in ${looked[0]} nor ${onPath}` : onPath;
  return { ok: false, reason: `"${expanded}" was not found ${where}` };
}

/** The message shown when the server binary cannot be used. */
export function missingServerMessage(reason: string): string {
  return (
    `Jaxpr: cannot start the language server: ${reason}. ` +
    `Install it with \`pip install jaxpr\` in the selected Python environment, put jaxpr-lsp on PATH, ` +
    `or set "${SERVER_PATH_SETTING}" to the path of the jaxpr-lsp binary.`
  );
}

/**
 * The message shown in Restricted Mode (an untrusted folder), where VS Code
 * ignores the folder's own value of the setting: saying only "not found on
 * PATH" would be wrong when the folder does set it.
 */
export function restrictedModeMessage(reason: string): string {
  return (
    `Restricted Mode: this folder's "${SERVER_PATH_SETTING}" is not used until you trust the folder, ` +
    `and the language server cannot start without it: ${reason}. ` +
    `Trust the folder, put jaxpr-lsp on PATH, or set "${SERVER_PATH_SETTING}" in your user settings.`
  );
}

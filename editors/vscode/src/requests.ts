// Requests that VS Code makes while the client is being stopped.
// Kept free of the `vscode` module so it can be unit-tested with plain Node.

import type { Middleware } from 'vscode-languageclient';

/**
 * The provider middleware of every feature the server offers (see the
 * capabilities in `server/src/backend.rs`). Each takes the provider's
 * arguments followed by `next`. `executeCommand` is not among them: a build
 * or a trace the user asked for must fail loudly, not answer nothing.
 */
export const PROVIDER_MIDDLEWARE: readonly (keyof Middleware)[] = [
  'provideHover',
  'provideDefinition',
  'provideImplementation',
  'provideReferences',
  'provideDocumentHighlights',
  'prepareRename',
  'provideRenameEdits',
  'provideDocumentSymbols',
  'provideWorkspaceSymbols',
  'prepareCallHierarchy',
  'provideCallHierarchyIncomingCalls',
  'provideCallHierarchyOutgoingCalls',
  'provideSelectionRanges',
  'provideFoldingRanges',
  'provideDocumentSemanticTokens',
  'provideDocumentRangeSemanticTokens',
  'provideInlayHints',
  'provideCodeLenses',
  'provideCompletionItem',
];

/**
 * Middleware under which a request that fails because its client stopped
 * meanwhile answers "nothing" instead of an error.
 *
 * vscode-languageclient 9 checks that the client runs, then awaits its start
 * promise; a restart that begins between the two makes the request throw
 * `Starting server failed`, which VS Code logs as a failed provider. The
 * answer of a stopped server is not wanted anyway: VS Code asks the new one.
 */
export function quietWhenStopped(isCurrent: () => boolean): Middleware {
  const middleware: Record<string, unknown> = {};
  for (const key of PROVIDER_MIDDLEWARE) {
    middleware[key] = async (...args: unknown[]) => {
      const next = args.pop() as (...rest: unknown[]) => unknown;
      try {
        return await next(...args);
      } catch (err) {
        if (!isCurrent()) {
          return null;
        }
        throw err;
      }
    };
  }
  return middleware as Middleware;
}

import * as assert from 'assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import { test } from 'node:test';
import { PROVIDER_MIDDLEWARE, quietWhenStopped } from '../requests';

type Provider = (...args: unknown[]) => Promise<unknown>;

function provider(middleware: object, key: string): Provider {
  const fn = (middleware as Record<string, unknown>)[key];
  assert.equal(typeof fn, 'function', `${key} is in the middleware`);
  return fn as Provider;
}

test('a request of a stopped client answers nothing', async () => {
  const middleware = quietWhenStopped(() => false);
  const failing = async () => {
    throw new Error('Starting server failed');
  };
  for (const key of PROVIDER_MIDDLEWARE) {
    assert.equal(await provider(middleware, key)('doc', 'position', 'token', failing), null, key);
  }
});

test('a request of the running client keeps its answer and its errors', async () => {
  const middleware = quietWhenStopped(() => true);
  const hover = provider(middleware, 'provideHover');
  const seen: unknown[][] = [];
  const answer = await hover('doc', 'position', 'token', async (...args: unknown[]) => {
    seen.push(args);
    return 'hover text';
  });
  assert.equal(answer, 'hover text');
  assert.deepEqual(seen, [['doc', 'position', 'token']]);
  await assert.rejects(
    hover('doc', 'position', 'token', async () => {
      throw new Error('server error');
    }),
    /server error/,
  );
});

test('the middleware covers every provider capability the server announces', () => {
  // The capabilities are announced in the server's `initialize` answer.
  const backend = fs.readFileSync(path.join(__dirname, '..', '..', '..', '..', 'server', 'src', 'backend.rs'), 'utf8');
  const capabilities: Record<string, string[]> = {
    hover_provider: ['provideHover'],
    definition_provider: ['provideDefinition'],
    implementation_provider: ['provideImplementation'],
    references_provider: ['provideReferences'],
    document_highlight_provider: ['provideDocumentHighlights'],
    rename_provider: ['prepareRename', 'provideRenameEdits'],
    document_symbol_provider: ['provideDocumentSymbols'],
    workspace_symbol_provider: ['provideWorkspaceSymbols'],
    call_hierarchy_provider: ['prepareCallHierarchy', 'provideCallHierarchyIncomingCalls', 'provideCallHierarchyOutgoingCalls'],
    selection_range_provider: ['provideSelectionRanges'],
    folding_range_provider: ['provideFoldingRanges'],
    semantic_tokens_provider: ['provideDocumentSemanticTokens', 'provideDocumentRangeSemanticTokens'],
    inlay_hint_provider: ['provideInlayHints'],
    code_lens_provider: ['provideCodeLenses'],
    completion_provider: ['provideCompletionItem'],
    // Commands the user runs report their own failures (build.ts, trace.ts).
    execute_command_provider: [],
  };
  const announced = [...backend.matchAll(/(\w+_provider): Some/g)].map((m) => m[1]);
  for (const capability of announced) {
    if (capability === 'prepare_provider' || capability === 'resolve_provider') {
      continue;
    }
    const keys = capabilities[capability];
    assert.ok(keys, `the test knows which middleware serves ${capability}`);
    for (const key of keys) {
      assert.ok(PROVIDER_MIDDLEWARE.includes(key as never), `${key} (for ${capability}) is guarded`);
    }
  }
});

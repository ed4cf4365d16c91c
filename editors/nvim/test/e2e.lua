-- End-to-end test of the Neovim client: real headless Neovim (0.7+), real jaxpr-lsp.
--
--   JAXPR_LSP=target/release/jaxpr-lsp JAXPR_CORPUS=../shared/corpus \
--     nvim --headless --noplugin -u NONE -i NONE -n \
--       --cmd 'set rtp^=editors/nvim' -c 'luafile editors/nvim/test/e2e.lua'
--
-- Exits 0 when every check passes; otherwise prints what failed and exits 1
-- (`cquit 1`). Run by `cargo test --release -p jaxpr-lsp --test neovim`.

-- Run the body under xpcall, so that a Lua error fails the test instead of
-- leaving a headless Neovim running.
if not _G.__jaxpr_e2e_inner then
  _G.__jaxpr_e2e_inner = true
  local self = debug.getinfo(1, 'S').source:gsub('^@', '')
  local ok, err = xpcall(dofile, debug.traceback, self)
  if not ok then
    io.stderr:write('E2E FAILED: Lua error: ' .. tostring(err) .. '\n')
    io.stderr:flush()
    vim.cmd('cquit 1')
  end
  return
end

local uv = vim.loop
local T0 = uv.now()
local TIMEOUT_MS = tonumber(vim.env.JAXPR_E2E_TIMEOUT_MS or '') or 120000
local STEP_MS = 20000 -- per wait

local function out(msg)
  io.stdout:write(('[%6.2fs] %s\n'):format((uv.now() - T0) / 1000, msg))
  io.stdout:flush()
end

local finished = false
local function fail(msg)
  if finished then
    return
  end
  finished = true
  io.stdout:flush()
  io.stderr:write('E2E FAILED: ' .. msg .. '\n')
  io.stderr:flush()
  vim.cmd('cquit 1')
  os.exit(1) -- not reached
end

local function check(cond, msg, ...)
  if not cond then
    fail(select('#', ...) > 0 and msg:format(...) or msg)
  end
  return cond
end

-- A global guard: a scheduled callback runs even inside vim.wait and the
-- synchronous LSP requests.
local guard = uv.new_timer()
guard:start(TIMEOUT_MS, 0, vim.schedule_wrap(function()
  fail(('global timeout: the test did not finish within %d ms'):format(TIMEOUT_MS))
end))

local function wait_for(what, cond, ms)
  local ok = vim.wait(ms or STEP_MS, cond, 10)
  check(ok, 'timed out after %d ms waiting for %s', ms or STEP_MS, what)
end

---------------------------------------------------------------------------
-- Set-up
---------------------------------------------------------------------------

check(vim.fn.has('nvim-0.7') == 1, 'Neovim 0.7 or later is needed, this is %s', tostring(vim.version and vim.inspect(vim.version())))

local script = debug.getinfo(1, 'S').source:gsub('^@', '')
local plugin_dir = vim.fn.fnamemodify(script, ':p:h:h')
if not vim.tbl_contains(vim.api.nvim_list_runtime_paths(), plugin_dir) then
  vim.opt.rtp:prepend(plugin_dir)
end

local server = vim.env.JAXPR_LSP
check(server and server ~= '', '$JAXPR_LSP must name the jaxpr-lsp binary')
check(vim.fn.executable(server) == 1, '$JAXPR_LSP=%s is not executable', tostring(server))
local corpus = vim.env.JAXPR_CORPUS
check(corpus and corpus ~= '', '$JAXPR_CORPUS must name the shared corpus directory')
corpus = vim.fn.fnamemodify(corpus, ':p'):gsub('/$', '')
check(vim.fn.isdirectory(corpus .. '/invalid') == 1, '%s/invalid is not a directory', corpus)

vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. 'AF'
vim.cmd('filetype plugin on')
vim.cmd('syntax on')

local v = vim.version and vim.version() or {}
out(('Neovim %s.%s.%s, server %s, corpus %s'):format(v.major, v.minor, v.patch, server, corpus))

-- Every vim.notify goes to stdout and is recorded.
local notes = {}
vim.notify = function(msg, level)
  table.insert(notes, { msg = tostring(msg), level = level or vim.log.levels.INFO })
  out('notify(' .. tostring(level) .. '): ' .. tostring(msg))
end
local function find_note(pattern, level)
  for _, n in ipairs(notes) do
    if n.msg:find(pattern, 1, true) and (level == nil or n.level == level) then
      return n
    end
  end
end

-- Count the diagnostics published per URI, to know when a publish arrived.
local published = {}
local orig_publish = vim.lsp.handlers['textDocument/publishDiagnostics']
vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx, cfg)
  if result and result.uri then
    published[result.uri] = (published[result.uri] or 0) + 1
  end
  return orig_publish(err, result, ctx, cfg)
end

local jaxpr = require('jaxpr')
jaxpr.setup({})
check(jaxpr.config.cmd[1] == server, 'setup{} should take the server from $JAXPR_LSP, got %s', vim.inspect(jaxpr.config.cmd))

local function client_of(buf)
  local c = jaxpr.get_client(buf)
  if c and c.initialized == true and vim.lsp.buf_is_attached(buf, c.id) then
    return c
  end
end

local function open(rel)
  local path = rel:sub(1, 1) == '/' and rel or (corpus .. '/' .. rel)
  check(vim.fn.filereadable(path) == 1, '%s is not readable', path)
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  check(vim.bo[buf].filetype == 'jaxpr', '%s: filetype is %q, expected "jaxpr" (ftdetect)', rel, vim.bo[buf].filetype)
  wait_for(rel .. ': jaxpr-lsp attached', function()
    return client_of(buf) ~= nil
  end)
  return buf, vim.uri_from_bufnr(buf)
end

-- 0-based (row, col) of the `nth` occurrence of `text` in the buffer, plus `delta` columns.
local function pos_of(buf, text, nth, delta)
  nth = nth or 1
  for row, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local init = 1
    while true do
      local s = line:find(text, init, true)
      if not s then
        break
      end
      nth = nth - 1
      if nth == 0 then
        return row - 1, s - 1 + (delta or 0)
      end
      init = s + 1
    end
  end
  fail(('`%s` not found in %s'):format(text, vim.api.nvim_buf_get_name(buf)))
end

local function set_cursor(row, col)
  vim.api.nvim_win_set_cursor(0, { row + 1, col })
end

local function position_params(buf)
  local c = client_of(buf)
  return vim.lsp.util.make_position_params(0, c and c.offset_encoding or 'utf-16')
end

local function hover_text(buf)
  local res, err = vim.lsp.buf_request_sync(buf, 'textDocument/hover', position_params(buf), STEP_MS)
  check(res ~= nil, 'hover request failed: %s', tostring(err))
  for _, r in pairs(res) do
    check(r.err == nil and r.error == nil, 'hover answered an error: %s', vim.inspect(r.err or r.error))
    local contents = r.result and r.result.contents
    if type(contents) == 'table' and contents.value then
      return contents.value
    elseif type(contents) == 'string' then
      return contents
    elseif type(contents) == 'table' then
      return table.concat(vim.tbl_map(function(c)
        return type(c) == 'table' and c.value or tostring(c)
      end, contents), '\n')
    end
  end
  return ''
end

local function errors_of(buf)
  return vim.diagnostic.get(buf, { severity = vim.diagnostic.severity.ERROR })
end

local function kind_of(d)
  local lsp = d.user_data and d.user_data.lsp
  local data = lsp and lsp.data or (lsp and lsp.diagnostic and lsp.diagnostic.data)
  return type(data) == 'table' and data.kind or nil
end

local function describe(diags)
  local lines = {}
  for _, d in ipairs(diags) do
    table.insert(lines, ('  line %d col %d severity %s code %s kind %s: %s'):format(
      d.lnum + 1, d.col + 1, tostring(d.severity), tostring(d.code), tostring(kind_of(d)), d.message:gsub('\n.*', '')))
  end
  return #lines > 0 and table.concat(lines, '\n') or '  (none)'
end

local function read_json(path)
  return vim.fn.json_decode(table.concat(vim.fn.readfile(path), '\n'))
end

-- The codes of the kinds (README, "Diagnostics").
local CODE = {
  ['syntax'] = 'J0001',
  ['undefined-variable'] = 'J0002',
  ['duplicate-definition'] = 'J0003',
  ['shape-mismatch'] = 'J0004',
  ['dtype-mismatch'] = 'J0005',
  ['arity-mismatch'] = 'J0006',
  ['invalid-parameter'] = 'J0007',
  ['dimension-scope'] = 'J0008',
  ['inconclusive-dimension'] = 'J0009',
  ['unknown-primitive'] = 'J0010',
  ['aliased-dimension'] = 'J0011',
}

---------------------------------------------------------------------------
-- (a) Diagnostics of every invalid corpus file, as vim.diagnostic holds them
---------------------------------------------------------------------------

local function check_expected(rel, buf, expected)
  local errs = errors_of(buf)
  local used, allowed = {}, {}
  for _, e in ipairs(expected.errors) do
    for _, l in ipairs(e.lines) do
      allowed[l] = true
    end
    local hit
    for i, d in ipairs(errs) do
      if not used[i] and vim.tbl_contains(e.lines, d.lnum + 1) and vim.tbl_contains(e.kinds, kind_of(d)) then
        hit = i
        break
      end
    end
    check(hit, '%s: expected an error on line(s) %s of kind %s; Neovim holds:\n%s', rel,
      table.concat(e.lines, ','), table.concat(e.kinds, '|'), describe(errs))
    used[hit] = true
  end
  for _, d in ipairs(errs) do
    check(allowed[d.lnum + 1], '%s: unexpected error on line %d:\n%s', rel, d.lnum + 1, describe(errs))
    check(d.source == 'jaxpr', '%s: diagnostic source %s, expected "jaxpr"', rel, tostring(d.source))
    local kind = kind_of(d)
    check(CODE[kind] ~= nil and d.code == CODE[kind], '%s: line %d: code %s does not match kind %s (expected %s)',
      rel, d.lnum + 1, tostring(d.code), tostring(kind), tostring(CODE[kind]))
  end
end

do
  -- The named case first, then the rest of the folder.
  local cases = { 'invalid/broadcast_dims.jaxpr' }
  for _, p in ipairs(vim.fn.glob(corpus .. '/invalid/*.jaxpr', false, true)) do
    local rel = 'invalid/' .. vim.fn.fnamemodify(p, ':t')
    if rel ~= cases[1] then
      table.insert(cases, rel)
    end
  end
  check(#cases >= 10, 'expected at least 10 invalid corpus files, found %d', #cases)
  for _, rel in ipairs(cases) do
    local buf, uri = open(rel)
    wait_for(rel .. ': publishDiagnostics', function()
      return (published[uri] or 0) > 0
    end)
    local expected = read_json(corpus .. '/' .. rel:gsub('%.jaxpr$', '.expected.json'))
    check_expected(rel, buf, expected)
    if rel == 'invalid/broadcast_dims.jaxpr' then
      out('(a) ' .. rel .. ':\n' .. describe(errors_of(buf)))
      -- The default set-up maps no keys.
      check(vim.fn.maparg('gd', 'n', false, true).buffer ~= 1, 'setup{} must not map gd')
      check(vim.bo[buf].commentstring == '# %s', 'commentstring is %q', vim.bo[buf].commentstring)
      check(vim.b[buf].current_syntax == 'jaxpr', 'syntax/jaxpr.vim not loaded (b:current_syntax=%s)',
        tostring(vim.b[buf].current_syntax))
    end
  end
  out(('(a) diagnostics of %d invalid files match their expected.json'):format(#cases))
end

-- One client per root: all the invalid files share one.
do
  local ids = {}
  for _, c in ipairs(jaxpr.get_clients()) do
    ids[#ids + 1] = c.id
  end
  check(#ids == 1, 'expected one jaxpr-lsp client for the corpus root, found %d', #ids)
end

-- Options of a second setup call apply to later attachments.
jaxpr.setup({ keymaps = true })

---------------------------------------------------------------------------
-- (b) Hover on the `lambda` of a nested jaxpr
---------------------------------------------------------------------------

do
  local rel = 'catalyst/resize_loop.jaxpr'
  local buf, uri = open(rel)
  wait_for(rel .. ': publishDiagnostics', function()
    return (published[uri] or 0) > 0
  end)
  check(#errors_of(buf) == 0, '%s: no errors expected:\n%s', rel, describe(errors_of(buf)))
  local row, col = pos_of(buf, 'body_jaxpr={ lambda', 1, #'body_jaxpr={ ')
  set_cursor(row, col)
  local text = hover_text(buf)
  check(text:find('f64[DBIdx(0)]', 1, true), '%s: hover on `lambda` (%d:%d) lacks f64[DBIdx(0)]:\n%s', rel, row + 1, col + 1, text)
  check(text:find('in_type:  ((i64[], False), (i64[], True), (f64[DBIdx(0)], True))', 1, true),
    '%s: hover lacks the in_type of body_jaxpr:\n%s', rel, text)
  out(('(b) hover on lambda at %d:%d:\n%s'):format(row + 1, col + 1, text))

  -- The real hover handler shows it in a floating window.
  vim.lsp.buf.hover()
  local float
  wait_for('the hover window', function()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(w).relative ~= '' then
        local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false)
        if table.concat(lines, '\n'):find('DBIdx(0)', 1, true) then
          float = w
          return true
        end
      end
    end
    return false
  end)
  vim.api.nvim_win_close(float, true)
  out('(b) vim.lsp.buf.hover() opened a floating window with the type')

  -- keymaps = true: buffer-local K, gd, gr, <leader>rn.
  for _, lhs in ipairs({ 'K', 'gd', 'gr', '<leader>rn' }) do
    local m = vim.fn.maparg(lhs, 'n', false, true)
    check(m.buffer == 1, 'keymaps = true: %s is not mapped in the jaxpr buffer (%s)', lhs, vim.inspect(m))
  end
end

---------------------------------------------------------------------------
-- (c) Go to definition of a dimension variable, through vim.lsp.buf.definition()
---------------------------------------------------------------------------

local capture_buf
local capture_rel = 'catalyst/capture_loop.jaxpr'
do
  local buf, uri = open(capture_rel)
  capture_buf = buf
  wait_for(capture_rel .. ': publishDiagnostics', function()
    return (published[uri] or 0) > 0
  end)
  check(#errors_of(buf) == 0, '%s: no errors expected:\n%s', capture_rel, describe(errors_of(buf)))
  -- The `d` of `h:f64[d]`, and the binder `d:i64[]` of the body lambda.
  local from_row, from_col = pos_of(buf, 'h:f64[d]', 1, #'h:f64[')
  local to_row, to_col = pos_of(buf, 'lambda ; d:i64[]', 1, #'lambda ; ')
  check(from_row == 9 and to_row == 8 and to_col == 28, 'the corpus file changed: %d:%d -> %d:%d', from_row, from_col,
    to_row, to_col)

  set_cursor(from_row, from_col)
  vim.lsp.buf.definition()
  wait_for('the cursor to move (definition)', function()
    return vim.api.nvim_win_get_cursor(0)[1] ~= from_row + 1
  end)
  local cur = vim.api.nvim_win_get_cursor(0)
  check(vim.api.nvim_get_current_buf() == buf, 'definition left the buffer')
  check(cur[1] == to_row + 1 and cur[2] == to_col,
    'definition of `d` in `h:f64[d]` (%d:%d) landed on %d:%d, expected the binder `d:i64[]` at %d:%d', from_row + 1,
    from_col + 1, cur[1], cur[2] + 1, to_row + 1, to_col + 1)
  out(('(c) vim.lsp.buf.definition(): %d:%d -> %d:%d'):format(from_row + 1, from_col + 1, cur[1], cur[2] + 1))

  -- The same through the `gd` mapping.
  set_cursor(from_row, from_col)
  vim.api.nvim_feedkeys('gd', 'mx', false)
  wait_for('the cursor to move (gd)', function()
    local c = vim.api.nvim_win_get_cursor(0)
    return c[1] == to_row + 1 and c[2] == to_col
  end)
  out('(c) gd mapping jumps there too')
end

---------------------------------------------------------------------------
-- (d) Rename through vim.lsp.buf.rename(new_name)
---------------------------------------------------------------------------

do
  local buf = capture_buf
  -- The corpus files are read-only; the edits below stay in the buffer (never written).
  vim.bo[buf].readonly = false
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local row, col = pos_of(buf, 'h:f64[d]', 1, #'h:f64[')
  set_cursor(row, col)
  vim.lsp.buf.rename('n')
  wait_for('the rename to be applied', function()
    return vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]:find('h:f64[n]', 1, true) ~= nil
  end)
  local expected = vim.deepcopy(before)
  expected[9] = '      body_jaxpr={ lambda ; n:i64[] e:f64[n] f:i64[] g:f64[n]. let'
  expected[10] = '          h:f64[n] = add g e'
  local after = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  check(#after == #expected, 'rename changed the number of lines: %d -> %d', #expected, #after)
  for i = 1, #expected do
    check(after[i] == expected[i], 'after renaming `d` to `n`, line %d is\n  %s\nexpected\n  %s', i, after[i], expected[i])
  end
  out('(d) vim.lsp.buf.rename("n") renamed the 4 occurrences of `d` in the body lambda only')
end

---------------------------------------------------------------------------
-- (e) Edits reach the server (incremental didChange) and diagnostics follow
---------------------------------------------------------------------------

do
  local buf = capture_buf
  local row = pos_of(buf, 'h:f64[n] = add g e')
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
  local s = line:find('add g e', 1, true)
  vim.api.nvim_buf_set_text(buf, row, s + 5, row, s + 6, { 'x' }) -- `add g e` -> `add g x`
  wait_for('an undefined-variable error on line ' .. (row + 1), function()
    for _, d in ipairs(errors_of(buf)) do
      if d.lnum == row and kind_of(d) == 'undefined-variable' and d.code == 'J0002' then
        return true
      end
    end
    return false
  end)
  out('(e) after the edit:\n' .. describe(errors_of(buf)))
  vim.api.nvim_buf_set_text(buf, row, s + 5, row, s + 6, { 'e' })
  wait_for('the error to go away after undoing the edit', function()
    return #errors_of(buf) == 0
  end)
  out('(e) and it is gone when the edit is undone')
end

---------------------------------------------------------------------------
-- (k) Navigating large programs: call hierarchy through
-- vim.lsp.buf.incoming_calls() / outgoing_calls() (the quickfix list),
-- workspace symbols through vim.lsp.buf.workspace_symbol(), and selection
-- ranges (Neovim 0.7 has no client command for them: a request).
---------------------------------------------------------------------------

do
  -- The later sections work on the buffer and cursor they left.
  local previous_buf = vim.api.nvim_get_current_buf()
  local previous_cursor = vim.api.nvim_win_get_cursor(0)
  local rel = 'jax/remat.jaxpr'
  local buf, uri = open(rel)
  wait_for(rel .. ': publishDiagnostics', function()
    return (published[uri] or 0) > 0
  end)
  local let_row, let_col = pos_of(buf, 'let jaxpr', 1, #'let ')
  local site1 = pos_of(buf, 'jaxpr=jaxpr', 1)
  local site2 = pos_of(buf, 'jaxpr=jaxpr', 2)
  set_cursor(let_row, let_col)
  vim.fn.setqflist({}, 'r')
  vim.lsp.buf.incoming_calls()
  wait_for('incoming calls in the quickfix list', function()
    return #vim.fn.getqflist() > 0
  end)
  local rows = vim.tbl_map(function(q)
    return q.lnum - 1
  end, vim.fn.getqflist())
  table.sort(rows)
  check(#rows == 2 and rows[1] == site1 and rows[2] == site2,
    'incoming calls of `let jaxpr`: expected the two `jaxpr=jaxpr` at rows %d and %d, got %s', site1, site2, vim.inspect(rows))
  out(('(k) incoming calls of `jaxpr`: %d call sites in the quickfix list'):format(#rows))
  vim.cmd('cclose')

  -- Outgoing calls of the main jaxpr: the `let`, called twice.
  local main_row, main_col = pos_of(buf, '{ lambda ; h:', 1, #'{ ')
  set_cursor(main_row, main_col)
  vim.fn.setqflist({}, 'r')
  vim.lsp.buf.outgoing_calls()
  wait_for('outgoing calls in the quickfix list', function()
    return #vim.fn.getqflist() > 0
  end)
  local texts = vim.tbl_map(function(q)
    return q.text
  end, vim.fn.getqflist())
  check(#texts == 2 and texts[1]:find('jaxpr', 1, true), 'outgoing calls of main: %s', vim.inspect(vim.fn.getqflist()))
  out('(k) outgoing calls of main: ' .. texts[1])
  vim.cmd('cclose')

  -- Workspace symbols: the jaxprs of every file of the folder, open or not.
  vim.fn.setqflist({}, 'r')
  vim.lsp.buf.workspace_symbol('remainder')
  wait_for('workspace symbols in the quickfix list', function()
    return #vim.fn.getqflist() > 0
  end)
  local found = false
  for _, q in ipairs(vim.fn.getqflist()) do
    local name = vim.api.nvim_buf_get_name(q.bufnr)
    if name:find('control.jaxpr', 1, true) and q.text:find('remainder', 1, true) then
      found = true
    end
  end
  check(found, 'workspace symbol `remainder` of jax/control.jaxpr (not open) not found: %s', vim.inspect(vim.fn.getqflist()))
  out(('(k) workspace symbols for "remainder": %d, control.jaxpr among them'):format(#vim.fn.getqflist()))
  vim.cmd('cclose')

  -- Selection ranges from the operand `k` of `o = remat2[...] i k n`.
  local op_row, op_col = pos_of(buf, '] i k n', 1, #'] i ')
  local res = vim.lsp.buf_request_sync(buf, 'textDocument/selectionRange', {
    textDocument = { uri = uri },
    positions = { { line = op_row, character = op_col } },
  }, STEP_MS)
  local chain = {}
  for _, r in pairs(res or {}) do
    local at = r.result and r.result[1]
    while at do
      table.insert(chain, at.range)
      at = at.parent
    end
  end
  local eqn_row = pos_of(buf, 'o:f32[3,4] = remat2', 1)
  check(#chain >= 5 and chain[1].start.line == op_row and chain[1].start.character == op_col
    and chain[3].start.line == eqn_row and chain[#chain].start.line == 0,
    'selection ranges from `k`: %s', vim.inspect(chain))
  out(('(k) selection ranges from the operand: %d levels, the equation at row %d'):format(#chain, eqn_row))
  vim.api.nvim_set_current_buf(previous_buf)
  vim.api.nvim_win_set_cursor(0, previous_cursor)
end

---------------------------------------------------------------------------
-- (l) Related locations: a reused key's warning shows, in its float, where
-- the key was consumed first (Neovim itself shows only the message).
---------------------------------------------------------------------------

do
  local previous_buf = vim.api.nvim_get_current_buf()
  local previous_cursor = vim.api.nvim_win_get_cursor(0)
  local rel = 'jax/random.jaxpr'
  local buf = open(rel)
  local reuse
  wait_for(rel .. ': the key-reuse warning', function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == 'J0013' then
        reuse = d
        return true
      end
    end
  end)
  local related = reuse.user_data and reuse.user_data.lsp and reuse.user_data.lsp.relatedInformation or {}
  check(#related == 1, '%s: J0013 should have the first use as its one related location: %s', rel, vim.inspect(reuse))
  local first_row = related[1].location.range.start.line
  check(first_row < reuse.lnum, 'the first use (row %d) should come before the reuse (row %d)', first_row, reuse.lnum)
  local float_buf, float_win = vim.diagnostic.open_float(buf, { scope = 'cursor', pos = { reuse.lnum, reuse.col } })
  check(float_buf ~= nil, 'no diagnostic float at the reuse (row %d, col %d)', reuse.lnum, reuse.col)
  local text = table.concat(vim.api.nvim_buf_get_lines(float_buf, 0, -1, false), '\n')
  local where = ('random.jaxpr:%d:'):format(first_row + 1)
  check(text:find(where, 1, true) and text:find('consumed here by', 1, true) and text:find('help: split the key', 1, true),
    'the float should show the related location %s and the help line:\n%s', where, text)
  vim.api.nvim_win_close(float_win, true)
  out(('(l) the key-reuse float shows its first use at %s'):format(where))
  vim.api.nvim_set_current_buf(previous_buf)
  vim.api.nvim_win_set_cursor(0, previous_cursor)
end

---------------------------------------------------------------------------
-- (f) :JaxprBuildStablehlo / :JaxprBuildNative show the server's answer
---------------------------------------------------------------------------

do
  -- A copy outside the corpus: the build writes its output beside the file.
  local tmp = vim.fn.tempname() .. '.jaxpr'
  vim.fn.writefile(vim.fn.readfile(corpus .. '/' .. capture_rel), tmp)
  local buf = open(tmp)
  wait_for('the copy to be checked', function()
    return (published[vim.uri_from_bufnr(buf)] or 0) > 0
  end)
  for _, case in ipairs({ { 'JaxprBuildStablehlo', 'StableHLO' }, { 'JaxprBuildNative', 'native' } }) do
    vim.cmd(case[1])
    local note
    wait_for(':' .. case[1] .. ' to report', function()
      for _, n in ipairs(notes) do
        local failed = n.msg:find('building ' .. case[2], 1, true) and n.msg:find('failed', 1, true)
        if failed or n.msg:find('built ' .. case[2], 1, true) then
          note = n
          return true
        end
      end
      return false
    end)
    -- Both back ends write beside the file: the module, or the library and its header.
    check(not note.msg:find('failed', 1, true), ':%s failed: %s', case[1], note.msg)
    if case[2] == 'StableHLO' then
      local mlir = tmp:gsub('%.jaxpr$', '.mlir')
      check(vim.fn.filereadable(mlir) == 1, ':%s: %s was not written', case[1], mlir)
      check(table.concat(vim.fn.readfile(mlir), '\n'):find('stablehlo.while', 1, true),
        ':%s: %s has no stablehlo.while', case[1], mlir)
    else
      local dir, stem = vim.fn.fnamemodify(tmp, ':h'), vim.fn.fnamemodify(tmp, ':t:r')
      local so = dir .. '/lib' .. stem .. '.so'
      check(vim.fn.filereadable(so) == 1, ':%s: %s was not written', case[1], so)
      check(vim.fn.filereadable(dir .. '/lib' .. stem .. '.h') == 1, ':%s: no header beside %s', case[1], so)
    end
    out(('(f) :%s -> %s'):format(case[1], note.msg))
    notes = {}
  end
  vim.cmd('bwipeout! ' .. buf)
end

---------------------------------------------------------------------------
-- (g) :JaxprRestart
---------------------------------------------------------------------------

do
  local buf = capture_buf
  local old = client_of(buf).id
  vim.cmd('JaxprRestart')
  wait_for('a new client after :JaxprRestart', function()
    local c = client_of(buf)
    return c ~= nil and c.id ~= old
  end)
  wait_for('the old client to exit', function()
    return vim.lsp.get_client_by_id(old) == nil
  end)
  local row, col = pos_of(buf, 'lambda ; n:i64[]', 1, 0)
  set_cursor(row, col)
  local text = hover_text(buf)
  check(text:find('in_type', 1, true), 'hover after :JaxprRestart: %s', text)
  check(find_note('restarted', vim.log.levels.INFO), ':JaxprRestart did not report')
  out(('(g) :JaxprRestart: client %d -> %d, hover works'):format(old, client_of(buf).id))
end

---------------------------------------------------------------------------
-- (i) A Python file with a tracing session (setup{ python = true }):
-- diagnostics, hover, definition into the session's jaxpr, :JaxprTraceAgain
---------------------------------------------------------------------------

do
  jaxpr.setup({ keymaps = true, python = true })
  local dir = vim.fn.resolve(vim.fn.tempname())
  local sdir = dir .. '/.jaxpr-session'
  vim.fn.mkdir(sdir, 'p')
  local py = dir .. '/model.py'
  vim.fn.writefile({ 'def f(a, b):', '    c = a * 2', '    return c + b' }, py)
  -- A session in the format `jaxpr trace` writes (by hand: a real program
  -- with a checker error in its jaxpr is not at hand). No `jaxpr trace` on
  -- this machine wrote it, so :JaxprTraceAgain must refuse its command.
  vim.fn.writefile({
    '{ lambda ; a:f32[v] b:f32[4]. let',
    '    c:f32[v] = mul a 2.0:f32[]  # ' .. py .. ':2:8 (f)',
    '    d:f32[v] = add c b          # ' .. py .. ':3:11 (f)',
    '  in (d,) }',
  }, sdir .. '/f.jaxpr')
  vim.fn.writefile({ vim.fn.json_encode({
    version = 1, status = 'ok', command = { '/nonexistent/python-e2e', 'model.py' }, cwd = dir,
    functions = { { name = 'f', kind = 'jit', file = py, line = 1, jaxpr = 'f.jaxpr', in_avals = { 'f32[v]', 'f32[4]' },
      out_avals = { 'f32[v]' }, in_type = '', out_type = '', check_errors = 1, source_map = {} } },
    errors = { { kind = 'TypeError', message = 'boom', file = py, line = 1, col = 4, ['function'] = 'f',
      during = 'tracing f' } },
  }) }, sdir .. '/session.json')

  vim.cmd('edit ' .. vim.fn.fnameescape(py))
  local buf = vim.api.nvim_get_current_buf()
  check(vim.bo[buf].filetype == 'python', 'model.py: filetype is %q', vim.bo[buf].filetype)
  wait_for('model.py: jaxpr-lsp attached', function()
    return client_of(buf) ~= nil
  end)
  wait_for('model.py: the session\'s two errors', function()
    return #errors_of(buf) == 2
  end)
  local by_line = {}
  for _, d in ipairs(errors_of(buf)) do
    by_line[d.lnum + 1] = d
  end
  check(by_line[1] and by_line[1].message:find('TypeError while tracing f: boom', 1, true),
    'the tracing error on line 1:\n%s', describe(errors_of(buf)))
  check(by_line[3] and by_line[3].code == 'J0004', 'the shape error of `add` on line 3:\n%s', describe(errors_of(buf)))
  out('(i) Python diagnostics:\n' .. describe(errors_of(buf)))

  set_cursor(1, 8)
  local text = hover_text(buf)
  check(text:find('c:f32[v] = mul a 2.0:f32[]', 1, true), 'hover on line 2 of model.py: %s', text)
  out('(i) hover on `c = a * 2` shows its equation')

  vim.lsp.buf.definition()
  wait_for('definition into the session\'s jaxpr', function()
    return vim.api.nvim_buf_get_name(0):find('f.jaxpr', 1, true) ~= nil
  end)
  check(vim.api.nvim_win_get_cursor(0)[1] == 2, 'definition landed on line %d of f.jaxpr, expected 2',
    vim.api.nvim_win_get_cursor(0)[1])
  out('(i) definition: model.py:2 -> f.jaxpr:2')

  vim.cmd('buffer ' .. buf)
  notes = {}
  vim.cmd('JaxprTraceAgain')
  wait_for(':JaxprTraceAgain to report', function()
    return find_note('tracing model.py failed', vim.log.levels.ERROR) ~= nil
  end)
  local note = find_note('tracing model.py failed').msg
  check(note:find('was not written by `jaxpr trace` on this machine', 1, true),
    ':JaxprTraceAgain: unclear message: %s', note)
  -- Nothing ran and nothing changed: the session and its errors stay.
  check(read_json(sdir .. '/session.json').status == 'ok', 'the refused session was rewritten')
  check(#errors_of(buf) == 2, 'the session\'s errors went:\n%s', describe(errors_of(buf)))
  out('(i) :JaxprTraceAgain -> ' .. note)
  vim.fn.delete(dir, 'rf')
end

---------------------------------------------------------------------------
-- (h) A missing server binary gives a clear message; *.jaxpr.txt is detected
---------------------------------------------------------------------------

do
  jaxpr.setup({ cmd = { '/nonexistent/jaxpr-lsp-e2e' } })
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  local path = dir .. '/dump.jaxpr.txt'
  vim.fn.writefile({ '{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }' }, path)
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  check(vim.bo[buf].filetype == 'jaxpr', 'dump.jaxpr.txt: filetype is %q, expected "jaxpr"', vim.bo[buf].filetype)
  wait_for('the missing-server message', function()
    return find_note('/nonexistent/jaxpr-lsp-e2e', vim.log.levels.ERROR) ~= nil
  end)
  check(find_note('/nonexistent/jaxpr-lsp-e2e').msg:find('not found', 1, true), 'unclear message: %s',
    find_note('/nonexistent/jaxpr-lsp-e2e').msg)
  check(#jaxpr.get_clients() >= 1 and jaxpr.get_client(buf) == nil, 'no client may attach without a server')
  out('(h) missing server: ' .. find_note('/nonexistent/jaxpr-lsp-e2e').msg)
  vim.fn.delete(dir, 'rf')
end

---------------------------------------------------------------------------
-- (j) Reload: :edit! reads an invalid file again from disk; the client stays
-- attached and the diagnostics come back. Then every client is stopped (as
-- when Neovim quits), and the LSP log must hold no error.
---------------------------------------------------------------------------

do
  -- (h) named a missing binary, in a folder it removed: back to the real
  -- binary, without (h)'s buffers.
  vim.cmd('silent! %bwipeout!')
  jaxpr.setup({ cmd = { server } })
  local rel = 'invalid/dtype_mix.jaxpr'
  local buf, uri = open(rel)
  wait_for(rel .. ': its error', function()
    return #errors_of(buf) > 0
  end)
  local id = client_of(buf).id
  local before = published[uri] or 0
  vim.cmd('edit!')
  wait_for(rel .. ': diagnostics published again after :edit!', function()
    return (published[uri] or 0) > before and #errors_of(buf) > 0
  end)
  check(client_of(buf) and client_of(buf).id == id, ':edit! changed the client of %s', rel)
  out(('(j) :edit! %s: still client %d, %d error(s) again'):format(rel, id, #errors_of(buf)))

  local ids = {}
  for _, c in ipairs(vim.lsp.get_active_clients()) do
    ids[#ids + 1] = c.id
    vim.lsp.stop_client(c.id)
  end
  wait_for('every client to shut down', function()
    for _, i in ipairs(ids) do
      if vim.lsp.get_client_by_id(i) ~= nil then
        return false
      end
    end
    return true
  end)
  local log = vim.lsp.get_log_path()
  local errors = {}
  if vim.fn.filereadable(log) == 1 then
    for _, line in ipairs(vim.fn.readfile(log)) do
      if line:find('[ERROR]', 1, true) then
        errors[#errors + 1] = line
      end
    end
  end
  check(#errors == 0, 'the LSP log (%s) has errors:\n%s', log, table.concat(errors, '\n'))
  out(('(j) %d client(s) stopped; no error in %s'):format(#ids, log))
end

guard:stop()
finished = true
out('all Neovim end-to-end checks passed')
vim.cmd('qa!')

-- Neovim client for jaxpr-lsp, the language server for JAX jaxprs.
--
--   require('jaxpr').setup{}            -- defaults
--   require('jaxpr').setup{ cmd = { '/path/to/jaxpr-lsp' }, keymaps = true }
--
-- Works on Neovim 0.7 and later: `vim.lsp.start` where it exists (0.8+),
-- otherwise `vim.lsp.start_client` + `vim.lsp.buf_attach_client`, with one
-- client per root directory (the nearest parent holding a root marker, else
-- the file's own directory).

local M = {}

local NAME = 'jaxpr-lsp'
local BUILD_COMMAND = 'jaxpr.server.build'
local TRACE_COMMAND = 'jaxpr.server.traceAgain'
local EMIT_LABEL = { stablehlo = 'StableHLO', native = 'native library' }

local uv = vim.loop
local levels = vim.log.levels

--- The defaults of `setup`. `cmd = nil` means the server `M.find_server`
--- finds: $JAXPR_LSP, the active Python environment's, or the one on $PATH.
M.defaults = {
  cmd = nil,
  cmd_env = nil,
  filetypes = { 'jaxpr' },
  root_markers = { '.git' },
  autostart = true,
  on_attach = nil,
  capabilities = nil,
  settings = {},
  init_options = nil,
  flags = nil,
  handlers = nil,
  keymaps = false,
  inlay_hints = false,
  -- Show each diagnostic's related locations in its float
  -- (vim.diagnostic.open_float).
  related_in_float = true,
  save_before_build = false,
  -- Python buffers: hover, diagnostics and definition from their tracing
  -- session (`jaxpr trace`), and :JaxprTraceAgain.
  python = false,
  -- Passed to the server as init_options.trace: re-trace on save, the
  -- interpreter for a file without a session, the time limit in seconds.
  trace = { onSave = false, python = 'python3', timeout = 120 },
}

M.default_keymaps = {
  hover = 'K',
  definition = 'gd',
  references = 'gr',
  rename = '<leader>rn',
}

local config = nil -- the options of the last `setup` call, defaults applied
local by_root = {} -- root directory -> client id
local stopping = {} -- client ids being stopped (never reused)
local warned = {} -- server commands already reported missing

local function notify(msg, level)
  vim.notify('jaxpr: ' .. msg, level or levels.INFO, { title = 'jaxpr' })
end

local function has(feature)
  return vim.fn.has(feature) == 1
end

--- Where the server is looked for when `setup` names no `cmd`, in order:
--- $JAXPR_LSP, the active Python environment (`pip install jaxpr` puts the
--- server in its bin folder: $VIRTUAL_ENV, then $CONDA_PREFIX), then $PATH.
--- Returns the command and the places looked at, for the message when none
--- has it.
local function find_server()
  local looked = {}
  local env = vim.env.JAXPR_LSP
  if env and env ~= '' then
    return { env }, { '$JAXPR_LSP = ' .. env }
  end
  for _, var in ipairs({ 'VIRTUAL_ENV', 'CONDA_PREFIX' }) do
    local prefix = vim.env[var]
    if prefix and prefix ~= '' then
      local candidate = prefix .. '/bin/' .. NAME
      if vim.fn.executable(candidate) == 1 then
        return { candidate }, looked
      end
      table.insert(looked, ('%s (from $%s)'):format(candidate, var))
    end
  end
  local on_path = vim.fn.exepath(NAME)
  if on_path ~= '' then
    return { on_path }, looked
  end
  table.insert(looked, '$PATH')
  return { NAME }, looked
end

local function default_cmd()
  return (find_server())
end

M.find_server = find_server

local function normalize_cmd(cmd)
  if type(cmd) == 'string' then
    cmd = { cmd }
  end
  cmd = vim.deepcopy(cmd)
  if type(cmd[1]) == 'string' and cmd[1]:sub(1, 1) == '~' then
    cmd[1] = vim.fn.expand(cmd[1])
  end
  return cmd
end

---------------------------------------------------------------------------
-- Clients
---------------------------------------------------------------------------

-- `client:method()` on 0.11+, `client.method()` before (closures, no self).
local function client_call(client, method, ...)
  if has('nvim-0.11') then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function is_alive(id)
  return id ~= nil and not stopping[id] and vim.lsp.get_client_by_id(id) ~= nil
end

--- The jaxpr-lsp clients, all of them or those attached to `bufnr`.
function M.get_clients(bufnr)
  local list
  if vim.lsp.get_clients then
    list = vim.lsp.get_clients({ name = NAME })
  else
    list = vim.lsp.get_active_clients()
  end
  local seen, out = {}, {}
  local function add(client)
    if client and client.name == NAME and not seen[client.id] then
      if bufnr == nil or vim.lsp.buf_is_attached(bufnr, client.id) then
        seen[client.id] = true
        table.insert(out, client)
      end
    end
  end
  for _, client in ipairs(list) do
    add(client)
  end
  -- Clients still initializing are not in the active list on 0.7.
  for _, id in pairs(by_root) do
    add(vim.lsp.get_client_by_id(id))
  end
  return out
end

--- The running jaxpr-lsp client attached to `bufnr` (default: current buffer).
function M.get_client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  for _, client in ipairs(M.get_clients(bufnr)) do
    if not stopping[client.id] then
      return client
    end
  end
  return nil
end

--- The root of the buffer's file: the nearest parent directory holding one
--- of `root_markers` (`.git`), else the file's own directory.
function M.root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return vim.fn.getcwd()
  end
  local start = vim.fn.fnamemodify(name, ':p:h')
  local markers = (config and config.root_markers) or M.defaults.root_markers
  local dir = start
  while true do
    for _, marker in ipairs(markers) do
      if uv.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir or parent == '' then
      break
    end
    dir = parent
  end
  return start
end

local function set_keymaps(bufnr)
  local maps = config.keymaps
  if maps == true then
    maps = M.default_keymaps
  elseif type(maps) == 'table' then
    maps = vim.tbl_extend('force', M.default_keymaps, maps)
  else
    return
  end
  local actions = {
    hover = { function() vim.lsp.buf.hover() end, 'hover' },
    definition = { function() vim.lsp.buf.definition() end, 'go to definition' },
    references = { function() vim.lsp.buf.references() end, 'references' },
    rename = { function() vim.lsp.buf.rename() end, 'rename' },
  }
  for action, lhs in pairs(maps) do
    local a = actions[action]
    if a and lhs then
      vim.keymap.set('n', lhs, a[1], { buffer = bufnr, silent = true, desc = 'jaxpr: ' .. a[2] })
    end
  end
end

--- A diagnostic's text in its float: the message (with its help line),
--- then each related location as `file:line:col: message` (a reused key's
--- first use, where a dimension variable was bound), which Neovim itself
--- does not show.
function M.format_diagnostic(d)
  local lsp = d.user_data and d.user_data.lsp
  local related = lsp and lsp.relatedInformation
  local ours = false
  for _, client in ipairs(M.get_clients()) do
    ours = ours or d.namespace == vim.lsp.diagnostic.get_namespace(client.id)
  end
  if not ours or type(related) ~= 'table' or #related == 0 then
    return d.message
  end
  local lines = { d.message }
  for _, r in ipairs(related) do
    local at = r.location.range.start
    local file = vim.fn.fnamemodify(vim.uri_to_fname(r.location.uri), ':t')
    table.insert(lines, ('  %s:%d:%d: %s'):format(file, at.line + 1, at.character + 1, r.message))
  end
  return table.concat(lines, '\n')
end

local function on_attach(client, bufnr)
  -- The float's format is global (`open_float` reads no namespace's
  -- configuration on 0.7); one the user set is left alone, and ours
  -- changes only this server's diagnostics.
  local float = (vim.diagnostic.config() or {}).float
  float = type(float) == 'table' and float or {}
  if config.related_in_float and float.format == nil then
    vim.diagnostic.config({ float = vim.tbl_extend('force', float, { format = M.format_diagnostic }) })
  end
  -- Neovim 0.8+ sets these itself; 0.7 leaves them to the user.
  if vim.bo[bufnr].omnifunc == '' then
    vim.bo[bufnr].omnifunc = 'v:lua.vim.lsp.omnifunc'
  end
  if vim.bo[bufnr].tagfunc == '' then
    vim.bo[bufnr].tagfunc = 'v:lua.vim.lsp.tagfunc'
  end
  set_keymaps(bufnr)
  if config.inlay_hints and vim.lsp.inlay_hint then
    -- 0.10+: enable(bool, filter); 0.10 pre-releases: enable(bufnr, bool).
    if not pcall(vim.lsp.inlay_hint.enable, true, { bufnr = bufnr }) then
      pcall(vim.lsp.inlay_hint.enable, bufnr, true)
    end
  end
  if config.on_attach then
    config.on_attach(client, bufnr)
  end
end

local function client_config(root)
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  if config.capabilities then
    capabilities = vim.tbl_deep_extend('force', capabilities, config.capabilities)
  end
  return {
    name = NAME,
    cmd = config.cmd,
    cmd_cwd = root,
    cmd_env = config.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    capabilities = capabilities,
    settings = config.settings,
    init_options = vim.tbl_deep_extend('force', { trace = config.trace }, config.init_options or {}),
    flags = config.flags,
    handlers = config.handlers,
    -- Read `config` at attach time, so that a later `setup` call applies.
    on_attach = function(client, bufnr)
      on_attach(client, bufnr)
    end,
    on_exit = function(_, _, client_id)
      stopping[client_id] = nil
      for r, id in pairs(by_root) do
        if id == client_id then
          by_root[r] = nil
        end
      end
    end,
  }
end

local function server_available()
  local exe = config.cmd[1]
  if type(exe) == 'string' and vim.fn.executable(exe) == 1 then
    return true
  end
  local key = tostring(exe)
  if not warned[key] then
    warned[key] = true
    local where = ''
    if exe == NAME then
      local _, looked = find_server()
      where = ' Looked in: ' .. table.concat(looked, ', ') .. '.'
    end
    notify(
      ('the language server `%s` was not found or is not executable.%s Install it '
        .. '(`pip install jaxpr` in the active Python environment, or `cargo install --path server` '
        .. 'in the jaxpr repository) and put it on $PATH, '
        .. 'or point $JAXPR_LSP or `setup{ cmd = { "/path/to/jaxpr-lsp" } }` at it.'):format(key, where),
      levels.ERROR
    )
  end
  return false
end

--- Starts (or reuses) the client of the buffer's root and attaches it.
--- Returns the client id, or nil when the server cannot be started.
function M.attach(bufnr)
  if not config then
    M.setup({})
  end
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not vim.api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  if not server_available() then
    return nil
  end
  local root = M.root_dir(bufnr)
  local cfg = client_config(root)
  local id
  if vim.lsp.start then
    id = vim.lsp.start(cfg, {
      bufnr = bufnr,
      reuse_client = function(client, conf)
        return client.name == conf.name and client.config.root_dir == conf.root_dir and not stopping[client.id]
      end,
    })
  else
    id = by_root[root]
    if not is_alive(id) then
      id = vim.lsp.start_client(cfg)
    end
    if id then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  end
  if not id then
    notify(('could not start `%s` for %s'):format(table.concat(config.cmd, ' '), root), levels.ERROR)
    return nil
  end
  by_root[root] = id
  return id
end

local function jaxpr_buffers()
  local out = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.tbl_contains(config.filetypes, vim.bo[b].filetype) then
      table.insert(out, b)
    end
  end
  return out
end

--- Stops every jaxpr-lsp client and starts new ones for the open jaxpr buffers.
function M.restart()
  if not config then
    M.setup({})
  end
  local ids = {}
  for _, client in ipairs(M.get_clients()) do
    stopping[client.id] = true
    table.insert(ids, client.id)
    vim.lsp.stop_client(client.id)
  end
  by_root = {}
  warned = {}
  local deadline = uv.now() + 3000
  local forced = false
  local function start_again()
    local alive = vim.tbl_filter(function(id)
      return vim.lsp.get_client_by_id(id) ~= nil
    end, ids)
    if #alive > 0 then
      if uv.now() < deadline then
        vim.defer_fn(start_again, 50)
        return
      elseif not forced then
        forced = true
        for _, id in ipairs(alive) do
          vim.lsp.stop_client(id, true)
        end
        deadline = uv.now() + 2000
        vim.defer_fn(start_again, 50)
        return
      end
      -- Still there: start new clients anyway; the old ones are never reused.
    end
    local bufs, started = jaxpr_buffers(), 0
    for _, b in ipairs(bufs) do
      if M.attach(b) then
        started = started + 1
      end
    end
    if #bufs == 0 then
      notify('stopped the language server; it starts again with the next jaxpr buffer')
    elseif started > 0 then
      notify(('restarted the language server (%d buffer%s)'):format(started, started == 1 and '' or 's'))
    end -- else M.attach has said why not
  end
  start_again()
end

---------------------------------------------------------------------------
-- Build (workspace/executeCommand jaxpr.server.build)
---------------------------------------------------------------------------

local function error_message(err)
  if type(err) ~= 'table' then
    return tostring(err)
  end
  local msg = err.message
  if type(msg) ~= 'string' or msg == '' then
    msg = vim.inspect(err)
  end
  if type(err.data) == 'string' and err.data ~= '' and not msg:find(err.data, 1, true) then
    msg = msg .. '\n' .. err.data
  end
  return msg
end

local function output_path(path, bufnr)
  if path:match('^%a[%w+.-]+://') then
    return vim.uri_to_fname(path)
  end
  if path:sub(1, 1) == '/' or path:match('^%a:[\\/]') then
    return path
  end
  local dir = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':p:h')
  return dir .. '/' .. path
end

--- Asks the server to build the buffer's jaxpr. `emit` is 'stablehlo' or
--- 'native'. opts: bufnr, open (open a StableHLO result in a split),
--- on_done = function(err_message|nil, output_path|nil).
function M.build(emit, opts)
  opts = opts or {}
  local label = EMIT_LABEL[emit]
  local function done(err, path)
    if opts.on_done then
      opts.on_done(err, path)
    end
  end
  if not label then
    notify(('unknown build output `%s` (stablehlo or native)'):format(tostring(emit)), levels.ERROR)
    return done('unknown emit kind')
  end
  local bufnr = (opts.bufnr == nil or opts.bufnr == 0) and vim.api.nvim_get_current_buf() or opts.bufnr
  local fname = vim.api.nvim_buf_get_name(bufnr)
  local display = fname == '' and ('buffer ' .. bufnr) or vim.fn.fnamemodify(fname, ':t')
  if not config or not vim.tbl_contains(config.filetypes, vim.bo[bufnr].filetype) then
    notify(('open a jaxpr file to build %s for it'):format(label), levels.ERROR)
    return done('not a jaxpr buffer')
  end
  local client = M.get_client(bufnr)
  if not client then
    notify(('the language server is not running for %s, so %s cannot be built (see :JaxprRestart)'):format(display, label),
      levels.ERROR)
    return done('no client')
  end
  if not client.initialized then
    notify(('the language server is still starting; run the build again in a moment'), levels.WARN)
    return done('client not initialized')
  end
  if config.save_before_build and vim.bo[bufnr].modified and fname ~= '' then
    vim.api.nvim_buf_call(bufnr, function()
      vim.cmd('silent update')
    end)
  end
  local params = {
    command = BUILD_COMMAND,
    arguments = { { uri = vim.uri_from_bufnr(bufnr), emit = emit } },
  }
  notify(('building %s for %s…'):format(label, display))
  client_call(client, 'request', 'workspace/executeCommand', params, function(err, result)
    if err then
      local msg = error_message(err)
      notify(('building %s for %s failed: %s'):format(label, display, msg), levels.ERROR)
      return done(msg)
    end
    local path = type(result) == 'table' and result.path or nil
    if type(path) ~= 'string' or path == '' then
      local msg = 'the server answered without an output path (' .. vim.inspect(result) .. ')'
      notify(('building %s for %s failed: %s'):format(label, display, msg), levels.ERROR)
      return done(msg)
    end
    local out = output_path(path, bufnr)
    vim.g.jaxpr_last_build = out
    notify(('built %s for %s: %s'):format(label, display, out))
    if opts.open and emit == 'stablehlo' then
      vim.cmd('split ' .. vim.fn.fnameescape(out))
    end
    done(nil, out)
  end, bufnr)
end

---------------------------------------------------------------------------
-- Tracing sessions (workspace/executeCommand jaxpr.server.traceAgain)
---------------------------------------------------------------------------

--- Asks the server to run the Python buffer's trace again (the session's
--- recorded command, or `python FILE`). opts: bufnr,
--- on_done = function(err_message|nil, result|nil).
function M.trace_again(opts)
  opts = opts or {}
  local function done(err, result)
    if opts.on_done then
      opts.on_done(err, result)
    end
  end
  local bufnr = (opts.bufnr == nil or opts.bufnr == 0) and vim.api.nvim_get_current_buf() or opts.bufnr
  local fname = vim.api.nvim_buf_get_name(bufnr)
  if vim.bo[bufnr].filetype ~= 'python' or fname == '' then
    notify('open a Python file (saved on disk) to trace it', levels.ERROR)
    return done('not a python buffer')
  end
  local client = M.get_client(bufnr)
  if not client then
    notify('the language server is not attached to this buffer (setup{ python = true })', levels.ERROR)
    return done('no client')
  end
  if vim.bo[bufnr].modified then
    vim.api.nvim_buf_call(bufnr, function()
      vim.cmd('silent update')
    end)
  end
  local display = vim.fn.fnamemodify(fname, ':t')
  notify(('tracing %s…'):format(display))
  local params = { command = TRACE_COMMAND, arguments = { { uri = vim.uri_from_bufnr(bufnr) } } }
  client_call(client, 'request', 'workspace/executeCommand', params, function(err, result)
    if err then
      local msg = error_message(err)
      notify(('tracing %s failed: %s'):format(display, msg), levels.ERROR)
      return done(msg)
    end
    if type(result) == 'table' and result.status == 'ok' then
      notify(('traced %s: %d function(s), %d error(s)'):format(display, result.functions or 0, result.errors or 0))
    else
      local why = type(result) == 'table' and (result.message or result.status) or vim.inspect(result)
      notify(('tracing %s failed: %s'):format(display, tostring(why)), levels.ERROR)
    end
    done(nil, result)
  end, bufnr)
end

---------------------------------------------------------------------------
-- Setup
---------------------------------------------------------------------------

local function create_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd('JaxprBuildStablehlo', function(a)
    M.build('stablehlo', { open = a.bang })
  end, { bang = true, desc = 'jaxpr: build StableHLO for the current file (! opens it)' })
  cmd('JaxprBuildNative', function()
    M.build('native')
  end, { desc = 'jaxpr: build a native library for the current file' })
  cmd('JaxprRestart', function()
    M.restart()
  end, { desc = 'jaxpr: restart the language server' })
  cmd('JaxprTraceAgain', function()
    M.trace_again()
  end, { desc = 'jaxpr: run the tracing session of the current Python file again' })
end

--- Configures the client; may be called again to change the options (the
--- running servers keep their command until :JaxprRestart).
function M.setup(opts)
  opts = opts or {}
  local expected = {
    cmd = { 'table', 'string' },
    cmd_env = { 'table' },
    on_attach = { 'function' },
    capabilities = { 'table' },
    settings = { 'table' },
    filetypes = { 'table' },
    root_markers = { 'table' },
    keymaps = { 'boolean', 'table' },
    python = { 'boolean' },
    trace = { 'table' },
  }
  for key, types in pairs(expected) do
    if opts[key] ~= nil and not vim.tbl_contains(types, type(opts[key])) then
      error(('jaxpr.setup: `%s` must be a %s, got %s'):format(key, table.concat(types, ' or '), type(opts[key])), 2)
    end
  end
  config = vim.tbl_extend('force', vim.deepcopy(M.defaults), opts)
  config.trace = vim.tbl_extend('force', M.defaults.trace, opts.trace or {})
  if config.python and not vim.tbl_contains(config.filetypes, 'python') then
    config.filetypes = vim.list_extend(vim.deepcopy(config.filetypes), { 'python' })
  end
  config.cmd = normalize_cmd(opts.cmd or default_cmd())
  M.config = config

  create_commands()
  local group = vim.api.nvim_create_augroup('jaxpr_lsp', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = config.filetypes,
    callback = function(args)
      if config.autostart then
        M.attach(args.buf)
      end
    end,
    desc = 'jaxpr: start or attach jaxpr-lsp',
  })
  -- Buffers opened before setup (e.g. when the plugin is loaded lazily on `ft = 'jaxpr'`).
  if config.autostart then
    for _, b in ipairs(jaxpr_buffers()) do
      if not M.get_client(b) then
        M.attach(b)
      end
    end
  end
end

return M

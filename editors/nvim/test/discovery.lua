-- Finding the server without `cmd`: the active Python environment first
-- (where `pip install jaxpr` puts it), then $PATH, and a message naming
-- every place looked at when none has it. Run by server/tests/nvim_discovery.rs
-- with $JAXPR_TEST_VENV (a venv-like folder whose bin/jaxpr-lsp is the
-- built server), $JAXPR_TEST_EMPTY (a folder without it) and a $PATH
-- without the server.
local function check(cond, msg)
  if not cond then
    io.stderr:write('FAIL: ' .. msg .. '\n')
    vim.cmd('cquit 1')
  end
end

vim.o.swapfile = false
vim.cmd('filetype plugin on')
local jaxpr = require('jaxpr')
vim.env.JAXPR_LSP = nil

-- In an active virtual environment: its bin/jaxpr-lsp.
vim.env.VIRTUAL_ENV = vim.env.JAXPR_TEST_VENV
local cmd = jaxpr.find_server()
check(cmd[1] == vim.env.JAXPR_TEST_VENV .. '/bin/jaxpr-lsp', 'venv server not found: ' .. vim.inspect(cmd))
check(vim.fn.exepath('jaxpr-lsp') == '', 'the test needs a $PATH without jaxpr-lsp')

-- The server found there runs: diagnostics of an invalid file arrive.
jaxpr.setup({})
vim.cmd('edit ' .. vim.fn.fnameescape(vim.env.JAXPR_CORPUS .. '/invalid/broadcast_dims.jaxpr'))
local got = vim.wait(30000, function()
  return #vim.diagnostic.get(0) > 0
end, 50)
check(got, 'no diagnostics from the server found in the virtual environment')
local codes = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  codes[#codes + 1] = tostring(d.code)
end
check(vim.tbl_contains(codes, 'J0004'), 'expected J0004, got ' .. vim.inspect(codes))

-- None anywhere: the command stays the bare name, and the places looked at
-- are listed for the message.
vim.env.VIRTUAL_ENV = vim.env.JAXPR_TEST_EMPTY
vim.env.CONDA_PREFIX = nil
local none, looked = jaxpr.find_server()
check(none[1] == 'jaxpr-lsp', 'expected the bare name, got ' .. vim.inspect(none))
check(looked[1] == vim.env.JAXPR_TEST_EMPTY .. '/bin/jaxpr-lsp (from $VIRTUAL_ENV)', vim.inspect(looked))
check(looked[#looked] == '$PATH', vim.inspect(looked))

for _, client in ipairs(vim.lsp.get_active_clients and vim.lsp.get_active_clients() or {}) do
  client.stop()
end
io.stdout:write('discovery: ok\n')
vim.cmd('qall!')

-- Filetype detection for jaxprs: `*.jaxpr` and `*.jaxpr.txt`.
--
-- `set filetype` (not `setfiletype`) for `*.jaxpr.txt`: Neovim's own rules
-- have already called it `text` by the time ftdetect files run.
local group = vim.api.nvim_create_augroup('jaxpr_ftdetect', { clear = true })
vim.api.nvim_create_autocmd({ 'BufNewFile', 'BufRead' }, {
  group = group,
  pattern = '*.jaxpr',
  command = 'setfiletype jaxpr',
})
vim.api.nvim_create_autocmd({ 'BufNewFile', 'BufRead' }, {
  group = group,
  pattern = '*.jaxpr.txt',
  command = 'set filetype=jaxpr',
})

-- Buffer settings for jaxprs.
if vim.b.did_ftplugin then
  return
end
vim.b.did_ftplugin = 1

vim.bo.commentstring = '# %s'
vim.bo.comments = ':#'

vim.b.undo_ftplugin = 'setlocal commentstring< comments<'

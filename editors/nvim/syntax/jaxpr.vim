" Vim syntax file
" Language:    jaxpr (JAX's intermediate language, as printed by jax.make_jaxpr and Catalyst)
" Filenames:   *.jaxpr, *.jaxpr.txt
"
" A regex approximation for Neovim versions (or set-ups) without LSP semantic
" tokens; with Neovim 0.9+ and jaxpr-lsp attached, semantic tokens refine it.

if exists('b:current_syntax')
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match

" Parameter names: `name=` with no space before `=` (JAX prints `k=v` inside
" `prim[...]`, and ` = ` between the results and the primitive of an equation).
syn match jaxprParam     /\<\h\w*\ze=/

" The primitive of an equation: the word after ` = `.
syn match jaxprPrimitive /\%(\s=\s\+\)\@<=\h[[:alnum:]_.-]*/
syn match jaxprOperator  /\s\@<==\ze\s/

" Types: `f32[3,4]`, `i64[]`, `key<fry>[]`, `bool[]` after `:`; the shape is ordinary text.
syn match jaxprType      /\%(:\s*\)\@<=\h\w*\%(<[^<> \t]*>\)\=\ze\[/
syn match jaxprTypeSep   /\w\@<=:\ze\s*\h/

" Keywords. `in` is also a valid variable name, so only `in (outputs)` and a
" top-level `} in` are the keyword.
syn keyword jaxprKeyword lambda let
syn match jaxprKeyword   /\<in\ze\s*(/
syn match jaxprKeyword   /\%(}\s*\)\@<=in\>/

" Literals.
syn keyword jaxprBoolean True False
syn keyword jaxprConstant None
syn match jaxprNumber    /\%(\w\|\.\)\@<!-\=\d\+\%(\.\d*\)\=\%([eE][-+]\=\d\+\)\=\>/
syn match jaxprNumber    /\%(\w\)\@<!-\=\%(inf\|nan\)\>/
syn region jaxprString   start=/'/ skip=/\\'/ end=/'/ oneline
syn region jaxprString   start=/"/ skip=/\\"/ end=/"/ oneline

syn match jaxprDelimiter /[{}()\[\];]/

" Comments; JAX's source-info comments (`# file.py:12:8 (fn)`) get their location marked.
syn match jaxprComment   /#.*$/ contains=jaxprSourceInfo
syn match jaxprSourceInfo /\%(#\s*\)\@<=[^ \t:#]\+:\d\+\%(:\d\+\)\=/ contained

hi def link jaxprComment    Comment
hi def link jaxprSourceInfo SpecialComment
hi def link jaxprKeyword    Keyword
hi def link jaxprType       Type
hi def link jaxprTypeSep    Delimiter
hi def link jaxprPrimitive  Function
hi def link jaxprParam      Identifier
hi def link jaxprOperator   Operator
hi def link jaxprBoolean    Boolean
hi def link jaxprConstant   Constant
hi def link jaxprNumber     Number
hi def link jaxprString     String
hi def link jaxprDelimiter  Delimiter

let b:current_syntax = 'jaxpr'

let &cpo = s:cpo_save
unlet s:cpo_save

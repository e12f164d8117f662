package review

// KeysHelp describes every key of the reviewer's prompts, for `airlock
// review --help` (the prompt's own ? shows the keys of where it is).
const KeysHelp = `Keys, at a push's prompt (one key, no Enter):
  d  the diff, full screen (keys below), or in your pager ($PAGER, else
     less -R) where the terminal cannot (TERM dumb or unset, no known size);
     for a request that follows
     one you saw (the worker pushed again after your comments or rejection,
     or the push is asked again because its target moved), only what changed
     since you saw it
  f  the full diff (also D), when d shows what changed since
  a  approve: the push goes ahead as shown; a high risk (!!) asks you to type yes;
     then "Landing in 5 s: u to undo": u, before the push starts landing (the
     server's --undo-window), undoes it, and the push is asked again (a pick,
     and a request through a fleet's queue, take effect at once: no undo)
  r  reject: nothing is pushed; you may give a reason the worker is told; with
     comments, this asks the worker for those changes; u undoes it as it does
     an approval, before the worker is told
  w  the diff with whitespace ignored (as git diff -w), or shown again; a
     change of line endings alone is one line, "line endings: LF -> CRLF"
  c  comment for the worker: choose a file by number and a line (12), a range
     (12-14) or a line the push deletes (old 12), shown with the lines around
     it, or Enter for a comment on the whole file or a general one; comments go
     with whatever you decide
  p  pick: push only part of it. Hunk by hunk, as git add -p does, the flagged
     files first, when the server sends each commit's files; else file by
     file. Then:
       y  accept this hunk          n  leave it out (it stays in the sandbox); x too
       s  split it: y or n for each changed line (q back to the whole hunk)
       a  accept the rest of this file's hunks
       d  leave out the rest of this file's hunks
       e  edit this commit's message: a new subject, then k keeps the body
          shown, r replaces it, d drops it (what lands is what is shown)
       q  stop picking, back to the prompt, nothing decided    ?  these keys
     a summary (which commits land with which message, how much of each file,
     what stays in the sandbox) asks y before it is sent; each commit with
     anything accepted lands as a commit of its own, with its message
  m  every commit that lands with its whole message (hidden characters escaped)
  l  back to the list of waiting requests, deciding nothing (from any prompt
     and any question under it; a list of one too)
  ?  help
In the full-screen diff, where you read, pick, comment and decide: j k or
Down Up move the cursor a line, Space b or PgDn PgUp a page, ^D ^U half a
page, g G or Home End the ends; ] [ the next and previous file (files come
risk first), J K hunk, } { flagged file, ) ( comment; Left Right scroll
sideways; Enter or o open a file collapsed for being over 400 changed lines;
/ a search (no capital letter: any case) then n N. y x accept or leave out
the hunk under the cursor (on a file's banner, the file), + - one changed
line; c comments on the line under the cursor (a deleted line: its old
side), on the range from v, or on the file from its banner; C lists your
comments (e edits, d deletes); m marks the file viewed (kept for later
requests of the same change); f the file list; = one commit alone, then
the next; w whitespace ignored (to read and comment on; w again to pick);
s side by side or unified (side by side from 160 columns), Tab
the cursor to the other side of its row there; a approves (the rest, as a
pick, when you left something out), r rejects with a reason; ? its keys;
q back to the prompt (Esc does not leave). Changed words are highlighted;
code is coloured on 256 colours where TERM or COLORTERM says so, else 8,
none with NO_COLOR.
At a network request's prompt: a allow once, c allow this command for the
session, s allow every run for the session (type yes), r deny, l the list.
At the list: a number reviews that request, Enter the oldest, l lists again.
Ctrl-C stops airlock review; nothing undecided is decided.
`

package diffview

// toggleSpace is the w key: whitespace ignored (a review to read and
// comment on, not to pick from), or shown again (the review picked from).
// The comments go with the view; it stays on the file it was on.
func (v *diffView) toggleSpace() {
	if v.spaced == nil {
		return
	}
	path := ""
	if f, _ := v.under(); f != nil {
		path = f.path
	}
	v.space = !v.space
	nm := v.spaced(v.space)
	if err := nm.SetComments(v.ix.m.Comments()); err != nil {
		v.msg = err.Error()
		return
	}
	v.ix = newDiffIndex(nm, v.words)
	v.open, v.starts = make([]bool, len(v.ix.files)), nil
	v.lower, v.hitAt, v.top, v.cur, v.mark, v.only = "", -1, 0, 0, -1, -1
	v.layout()
	for k, i := range v.ix.order {
		if v.ix.files[i].path == path {
			v.jump(k)
			break
		}
	}
	v.msg = "whitespace shown: w ignores it"
	if v.space {
		v.msg = "whitespace ignored: w shows it again, to pick"
	}
}

package diffview

import (
	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/difftext"
)

// shownIndex indexes r's diff as the reviewer reads it (difftext): a
// line-ending change as one line, and, with space, whitespace ignored.
func shownIndex(r *approval.Request, words Words, space bool) *diffIndex {
	shown := *r
	shown.Diff = difftext.Show(r.Diff, difftext.Mode{IgnoreSpace: space})
	return newDiffIndex(&shown, words)
}

// toggleSpace is the w key: whitespace ignored, or shown again. The view
// is indexed again and stays on the file it was on.
func (v *diffView) toggleSpace() {
	if v.reindex == nil {
		return
	}
	path := ""
	if k, _ := v.at(v.top); k < len(v.ix.order) {
		path = v.ix.files[v.ix.order[k]].path
	}
	v.space = !v.space
	v.ix = v.reindex(v.space)
	v.open, v.starts = make([]bool, len(v.ix.files)), nil
	v.lower, v.hitAt, v.top = "", -1, 0
	v.layout()
	for k, i := range v.ix.order {
		if v.ix.files[i].path == path {
			v.jump(k)
			break
		}
	}
	v.msg = "whitespace shown: w ignores it"
	if v.space {
		v.msg = "whitespace ignored: w shows it again"
	}
}

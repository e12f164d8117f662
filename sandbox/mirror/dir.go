package mirror

// Parent is where mirrors go: dir, the operator's choice, or DefaultDir.
func Parent(dir string) string {
	if dir != "" {
		return dir
	}
	return DefaultDir()
}

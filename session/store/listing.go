package store

import "fmt"

// Listing is session id as st lists it: by itself when st can (the
// local store reads one directory), or found in the whole list.
func Listing(st Store, id string) (Listed, error) {
	if one, ok := st.(interface{ Listing(string) (Listed, error) }); ok {
		return one.Listing(id)
	}
	if _, err := st.ReadMeta(id); err != nil {
		return Listed{}, err
	}
	list, err := st.List()
	for _, l := range list {
		if l.ID == id {
			return l, nil
		}
	}
	if err == nil {
		err = fmt.Errorf("%w: %s (see airlock sessions list)", ErrNoSession, id)
	}
	return Listed{}, err
}

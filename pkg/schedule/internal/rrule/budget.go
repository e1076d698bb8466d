package rrule

// This file is tock's one addition to rrule-go v1.8.2 (see README.md): an
// iterator whose work can be bounded. rrule-go's iterator expands one FREQ
// period at a time and stops only at a produced occurrence, at UNTIL once an
// occurrence passes it, or in year 9999; a rule whose periods never produce
// one (FREQ=SECONDLY;BYSETPOS=2) therefore walks every second up to 9999.

// periodCost is what expanding one period costs beyond its days and times:
// working out the day set and stepping to the next period.
const periodCost = 8

// IteratorWithin is Iterator with a budget: before each period is expanded,
// spend is told the work it will take (in units of about one day or time of
// day examined), and once spend answers false the iterator ends as if the
// rule had no more occurrences. The caller tells the two apart by its own
// accounting.
func (r *RRule) IteratorWithin(spend func(units int) bool) Next {
	it := r.newIterator()
	it.spend = spend
	return it.next
}

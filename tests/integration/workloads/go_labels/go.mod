module golabels

go 1.13

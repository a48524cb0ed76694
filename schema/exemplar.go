package schema

// Exemplars: table TableExemplars. Placeholder of issue 11's exemplar storage:
// the cell format, row key and retention are defined here by the exemplar
// work; until then nothing is written to it.

// TableExemplars is the logical name of the exemplar table.
const TableExemplars = "exemplars"

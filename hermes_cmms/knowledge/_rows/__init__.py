"""The knowledge layer's SQL: the beliefs' rows (beliefs) and the graph's (graph)."""

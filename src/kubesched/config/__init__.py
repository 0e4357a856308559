"""config room; see DESIGN.md section 4."""

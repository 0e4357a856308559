"""report room; see DESIGN.md section 4."""

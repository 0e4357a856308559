"""sim room; see DESIGN.md section 4."""

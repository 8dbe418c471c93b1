"""Cross-modal attention: scattered points -> a function, a low-resolution image -> a function of two variables."""

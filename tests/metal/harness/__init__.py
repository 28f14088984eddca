"""The Metal CPU harness: see driver.py."""

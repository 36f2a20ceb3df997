"""Reporting: Allure labels, evidence, JUnit, summary.json/md, HTML (issue 7)."""

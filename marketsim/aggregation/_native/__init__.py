"""The estimators' compiled code: ``ones_products``, products of a label incidence matrix's 0/1
pattern with dense vectors in scipy's order of additions, without the matrix's values (C,
built by setup.py; optional)."""

"""The gate: is the text to be written equal to the original?"""

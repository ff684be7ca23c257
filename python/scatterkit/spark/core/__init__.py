"""The bottom layer: the exceptions every layer raises, the tensor column's element types
and struct, and which kind of session a session is. Imports nothing else of the package."""

"""The JSON API's models, one module per concern: each request's query or body and each answer.

dashboard/contract.py validates input and writes answers with them; dashboard/openapi.py makes the OpenAPI
document from them. A rule the server enforces lives here, in a field's type, and nowhere else.
"""

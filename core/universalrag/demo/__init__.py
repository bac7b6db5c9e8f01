"""A small offline knowledge base (four Markdown documents and a question for each) for demos."""

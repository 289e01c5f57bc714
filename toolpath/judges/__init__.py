"""The LLM judge (google-genai): client, reply parsing, Vertex templates and ADK criteria."""

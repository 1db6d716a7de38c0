"""The Écarté & Piquet bot arena: rules engines, referee, TCP server, formats and ratings."""

__version__ = "0.1.0"

"""Raw text -> documents -> paragraphs -> sentences, stored as Arrow datasets."""

-- The public key in clear (issue #36): it only tracks events and ships in web pages anyway, so the
-- dashboard may show it at any time. Written when a project is created or its public key rotated;
-- NULL for keys made before this column (shown again once the public key is rotated).
ALTER TABLE projects ADD COLUMN public_key text;

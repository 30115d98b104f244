/**
 * The languages the platform speaks to a contact in (the subscription pages), chosen by the contact's
 * `locale` (spec: soft-reserved custom data). One table per language; a sentence naming the address is
 * a function of it (already escaped HTML), since languages place it differently.
 */

interface PageStrings {
  readonly unsubscribeTitle: string
  readonly unsubscribeQuestion: (email: string) => string
  readonly unsubscribeButton: string
  readonly subscribeTitle: string
  readonly subscribeQuestion: (email: string) => string
  readonly subscribeButton: string
  readonly manageTitle: string
  readonly currentlySubscribed: (email: string) => string
  readonly currentlyUnsubscribed: (email: string) => string
  readonly subscribedTitle: string
  readonly unsubscribedTitle: string
  readonly willReceive: (email: string) => string
  readonly willNoLongerReceive: (email: string) => string
  readonly unsubscribeAgain: string
  readonly subscribeAgain: string
  readonly notOnList: string
  readonly invalidLinkTitle: string
  readonly invalidLink: string
}

const en: PageStrings = {
  unsubscribeTitle: "Unsubscribe",
  unsubscribeQuestion: (email) => `Stop receiving marketing email at ${email}?`,
  unsubscribeButton: "Unsubscribe",
  subscribeTitle: "Subscribe",
  subscribeQuestion: (email) => `Receive email at ${email}?`,
  subscribeButton: "Subscribe",
  manageTitle: "Email preferences",
  currentlySubscribed: (email) => `${email} is currently subscribed.`,
  currentlyUnsubscribed: (email) => `${email} is currently unsubscribed.`,
  subscribedTitle: "You are subscribed",
  unsubscribedTitle: "You are unsubscribed",
  willReceive: (email) => `${email} will receive marketing email.`,
  willNoLongerReceive: (email) => `${email} will no longer receive marketing email.`,
  unsubscribeAgain: "Unsubscribe again",
  subscribeAgain: "Subscribe again",
  notOnList: "This address is not on the list: it will receive no marketing email.",
  invalidLinkTitle: "Link not valid",
  invalidLink: "This link is not valid or has expired. Please use the link from your most recent email."
}

const de: PageStrings = {
  unsubscribeTitle: "Abmelden",
  unsubscribeQuestion: (email) => `Keine Marketing-E-Mails mehr an ${email} erhalten?`,
  unsubscribeButton: "Abmelden",
  subscribeTitle: "Anmelden",
  subscribeQuestion: (email) => `E-Mails an ${email} erhalten?`,
  subscribeButton: "Anmelden",
  manageTitle: "E-Mail-Einstellungen",
  currentlySubscribed: (email) => `${email} ist derzeit angemeldet.`,
  currentlyUnsubscribed: (email) => `${email} ist derzeit abgemeldet.`,
  subscribedTitle: "Sie sind angemeldet",
  unsubscribedTitle: "Sie sind abgemeldet",
  willReceive: (email) => `${email} erhält Marketing-E-Mails.`,
  willNoLongerReceive: (email) => `${email} erhält keine Marketing-E-Mails mehr.`,
  unsubscribeAgain: "Wieder abmelden",
  subscribeAgain: "Wieder anmelden",
  notOnList: "Diese Adresse steht nicht auf der Liste: Sie erhält keine Marketing-E-Mails.",
  invalidLinkTitle: "Link ungültig",
  invalidLink: "Dieser Link ist ungültig oder abgelaufen. Bitte verwenden Sie den Link aus Ihrer neuesten E-Mail."
}

// French puts a no-break space before "?" and ":".
const fr: PageStrings = {
  unsubscribeTitle: "Se désabonner",
  unsubscribeQuestion: (email) => `Ne plus recevoir d’e-mails marketing à l’adresse ${email}\u00a0?`,
  unsubscribeButton: "Se désabonner",
  subscribeTitle: "S’abonner",
  subscribeQuestion: (email) => `Recevoir des e-mails à l’adresse ${email}\u00a0?`,
  subscribeButton: "S’abonner",
  manageTitle: "Préférences e-mail",
  currentlySubscribed: (email) => `L’adresse ${email} est actuellement abonnée.`,
  currentlyUnsubscribed: (email) => `L’adresse ${email} est actuellement désabonnée.`,
  subscribedTitle: "Abonnement confirmé",
  unsubscribedTitle: "Désabonnement confirmé",
  willReceive: (email) => `L’adresse ${email} recevra des e-mails marketing.`,
  willNoLongerReceive: (email) => `L’adresse ${email} ne recevra plus d’e-mails marketing.`,
  unsubscribeAgain: "Se désabonner à nouveau",
  subscribeAgain: "Se réabonner",
  notOnList: "Cette adresse ne figure pas sur la liste\u00a0: elle ne recevra aucun e-mail marketing.",
  invalidLinkTitle: "Lien non valide",
  invalidLink: "Ce lien n’est pas valide ou a expiré. Veuillez utiliser le lien de votre e-mail le plus récent."
}

const es: PageStrings = {
  unsubscribeTitle: "Darse de baja",
  unsubscribeQuestion: (email) => `¿Dejar de recibir correos de marketing en ${email}?`,
  unsubscribeButton: "Darse de baja",
  subscribeTitle: "Suscribirse",
  subscribeQuestion: (email) => `¿Recibir correos en ${email}?`,
  subscribeButton: "Suscribirse",
  manageTitle: "Preferencias de correo",
  currentlySubscribed: (email) => `La dirección ${email} está suscrita actualmente.`,
  currentlyUnsubscribed: (email) => `La dirección ${email} no está suscrita actualmente.`,
  subscribedTitle: "Suscripción confirmada",
  unsubscribedTitle: "Baja confirmada",
  willReceive: (email) => `La dirección ${email} recibirá correos de marketing.`,
  willNoLongerReceive: (email) => `La dirección ${email} ya no recibirá correos de marketing.`,
  unsubscribeAgain: "Darse de baja de nuevo",
  subscribeAgain: "Volver a suscribirse",
  notOnList: "Esta dirección no está en la lista: no recibirá correos de marketing.",
  invalidLinkTitle: "Enlace no válido",
  invalidLink: "Este enlace no es válido o ha caducado. Utilice el enlace de su correo más reciente."
}

const nl: PageStrings = {
  unsubscribeTitle: "Afmelden",
  unsubscribeQuestion: (email) => `Geen marketingmails meer ontvangen op ${email}?`,
  unsubscribeButton: "Afmelden",
  subscribeTitle: "Aanmelden",
  subscribeQuestion: (email) => `E-mails ontvangen op ${email}?`,
  subscribeButton: "Aanmelden",
  manageTitle: "E-mailvoorkeuren",
  currentlySubscribed: (email) => `${email} is momenteel aangemeld.`,
  currentlyUnsubscribed: (email) => `${email} is momenteel afgemeld.`,
  subscribedTitle: "Je bent aangemeld",
  unsubscribedTitle: "Je bent afgemeld",
  willReceive: (email) => `${email} ontvangt marketingmails.`,
  willNoLongerReceive: (email) => `${email} ontvangt geen marketingmails meer.`,
  unsubscribeAgain: "Opnieuw afmelden",
  subscribeAgain: "Opnieuw aanmelden",
  notOnList: "Dit adres staat niet op de lijst: het ontvangt geen marketingmails.",
  invalidLinkTitle: "Ongeldige link",
  invalidLink: "Deze link is ongeldig of verlopen. Gebruik de link uit je meest recente e-mail."
}

const pt: PageStrings = {
  unsubscribeTitle: "Cancelar inscrição",
  unsubscribeQuestion: (email) => `Deixar de receber e-mails de marketing em ${email}?`,
  unsubscribeButton: "Cancelar inscrição",
  subscribeTitle: "Inscrever-se",
  subscribeQuestion: (email) => `Receber e-mails em ${email}?`,
  subscribeButton: "Inscrever-se",
  manageTitle: "Preferências de e-mail",
  currentlySubscribed: (email) => `O endereço ${email} está inscrito no momento.`,
  currentlyUnsubscribed: (email) => `O endereço ${email} não está inscrito no momento.`,
  subscribedTitle: "Inscrição confirmada",
  unsubscribedTitle: "Inscrição cancelada",
  willReceive: (email) => `O endereço ${email} receberá e-mails de marketing.`,
  willNoLongerReceive: (email) => `O endereço ${email} não receberá mais e-mails de marketing.`,
  unsubscribeAgain: "Cancelar inscrição novamente",
  subscribeAgain: "Inscrever-se novamente",
  notOnList: "Este endereço não está na lista: não receberá e-mails de marketing.",
  invalidLinkTitle: "Link inválido",
  invalidLink: "Este link é inválido ou expirou. Use o link do seu e-mail mais recente."
}

const TABLES = { en, de, fr, es, nl, pt } as const

export type Locale = keyof typeof TABLES

export const DEFAULT_LOCALE: Locale = "en"

const isLocale = (tag: string): tag is Locale => Object.hasOwn(TABLES, tag)

/**
 * The language for a contact's `locale` value: its primary subtag (`de-AT` and `de_AT` are `de`, any
 * case) when we have that language, English for anything else (unknown, missing, not a string).
 */
export const resolveLocale = (value: unknown): Locale => {
  if (typeof value !== "string") return DEFAULT_LOCALE
  const primary = value.trim().toLowerCase().split(/[-_]/)[0]!
  return isLocale(primary) ? primary : DEFAULT_LOCALE
}

export const pageStrings = (locale: Locale): PageStrings => TABLES[locale]
